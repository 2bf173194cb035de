"""CPU-bound busy processes beside a run, so a test run or a gate run shows what a loaded machine does.

    with CpuLoad(2):   # two processes spinning on the CPU until the block ends, however it ends
        ...

Each busy process is a plain interpreter spinning in a loop that also watches its parent: when the process
that started it is gone (even killed with SIGKILL, when no cleanup code of ours can run), it exits by
itself. The block's end kills and reaps them all.
"""

from __future__ import annotations

import os
import subprocess
import sys

# Spin; every few million operations check that the starter still lives (an orphan is re-parented).
BUSY_LOOP = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(200000):
        pass
"""


class CpuLoad:
    def __init__(self, processes: int) -> None:
        if processes < 0:
            raise ValueError("the number of busy processes must be 0 or more")
        self.count = processes
        self.processes: list[subprocess.Popen] = []

    def start(self) -> CpuLoad:
        for _ in range(self.count):
            self.processes.append(subprocess.Popen([sys.executable, "-I", "-c", BUSY_LOOP, str(os.getpid())],
                                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        return self

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait(timeout=30)
        self.processes.clear()

    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def __enter__(self) -> CpuLoad:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
