"""Budgets of the suite (bench/plugin_overhead.py runs it; README.md beside this file)."""
import os


def budget(n):
    return n - 1 if n and os.environ.get("BENCH_TIGHT_BUDGETS") == "1" else n
