"""``benchmarks.measure.server_cpu_ms``: the CPU a process has used, read from ``/proc``."""

import os
import subprocess
import sys

from benchmarks.measure import server_cpu_ms

#: Burns 0.3 s of CPU, says so, then waits (alive, so its /proc entry stays) for stdin.
_BUSY = """
import sys, time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
print("done", flush=True)
sys.stdin.read()
"""


def test_a_busy_process_shows_the_cpu_it_used() -> None:
    child = subprocess.Popen([sys.executable, "-c", _BUSY], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\n"
        used = server_cpu_ms([child.pid])
    finally:
        child.kill()
        child.wait(timeout=30)
    assert used is not None and 290 <= used < 5000  # 0.3 s busy, plus the start-up


def test_cpu_of_two_processes_adds_up_and_an_unknown_pid_is_none() -> None:
    mine = server_cpu_ms([os.getpid()])
    both = server_cpu_ms([os.getpid(), os.getppid()])
    assert mine is not None and both is not None and both >= mine
    assert server_cpu_ms([2**22 + 1]) is None  # above the kernel's largest pid
