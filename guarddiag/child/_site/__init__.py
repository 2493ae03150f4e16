"""Not imported by guarddiag: this folder goes on PYTHONPATH of the processes a script starts (see sitecustomize.py)."""
