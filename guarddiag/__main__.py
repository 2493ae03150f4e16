from guarddiag.cli import main

main()
