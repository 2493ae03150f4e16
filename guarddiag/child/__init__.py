"""The child process: the run request and its folder (runner, folders), the interpreter-side
bootstrap run by path in the target Python (_bootstrap, _site), and the process tree (proctree)."""
