"""Run one command and write its wall time, CPU time, peak RSS and exit code as JSON: ``_measure.py OUT TIMEOUT CMD...``.

run_bench starts this small process, which forks the command. The fork matters: Linux counts
the RSS of the process that *spawned* a command into that command's ``ru_maxrss`` (the spawning
memory map is the old one replaced at exec), so measured straight from run_bench, which holds
model.log's text while building scaled logs, every command would report at least run_bench's
own RSS. Forked from here its floor is this process's ~7 MiB.
"""

import json
import os
import signal
import sys
import time


def main() -> None:
    out, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.setitimer(signal.ITIMER_REAL, timeout)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    signal.setitimer(signal.ITIMER_REAL, 0)
    record = {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,  # steadier than wall time when other work shares the cores
        "maxrss_kib": usage.ru_maxrss,
        "exit_code": os.waitstatus_to_exitcode(status),
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(record, fh)


if __name__ == "__main__":
    main()
