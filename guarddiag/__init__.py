"""guarddiag: diagnose torch.compile recompiles from its guard and recompile logs."""

__version__ = "0.1.0"
