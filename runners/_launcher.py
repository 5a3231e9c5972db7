"""In-sandbox launcher: runs as the first process of the run (PID 1 of its namespace when there is
one), forks the target with rlimits applied, reports how it ended on a private pipe, and makes sure
nothing it started outlives it.

Usage (by runners/sandbox.py only): python -I -S _launcher.py STATUS_FD CPU_S AS_BYTES -- ARGV...
Standalone on purpose: stdlib only, no imports from the project, so `-I -S` start-up stays fast.
"""
import ctypes
import json
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def set_limits(cpu_s: int, as_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if cpu_s > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    if as_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def kill_quietly(pid: int) -> None:
    if pid <= 0:  # never a process group by accident
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone (the group's SIGTERM reached it first)
        pass


def kill_leftovers() -> None:
    """Orphans reparent to us (PID 1 or subreaper): kill and reap until none are left."""
    for _ in range(50):
        leftovers = children_of(os.getpid())
        if not leftovers:
            return
        for pid in leftovers:
            kill_quietly(pid)
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.01)
            except ChildProcessError:
                break


def main() -> None:
    status_fd, cpu_s, as_bytes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    argv = sys.argv[sys.argv.index("--") + 1:]
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    stop = []  # the target's pid, once there is one (a SIGTERM before that only marks the wish)
    signal.signal(signal.SIGTERM, lambda *_: kill_quietly(stop[0]) if stop else stop.append(0))
    target = os.fork()
    if target == 0:
        os.close(status_fd)
        set_limits(cpu_s, as_bytes)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"sandbox: cannot run {argv[0]}: {exc.strerror}\n")
            os._exit(127)
    if stop:  # asked to stop (timeout) before the target existed
        kill_quietly(target)
    stop[:] = [target]
    while True:
        pid, status, usage = os.wait4(-1, 0)
        if pid == target:
            break
    report = {"wait_status": status, "maxrss_kb": usage.ru_maxrss}
    if os.getpid() != 1:  # as PID 1 of a namespace, our exit kills everything left in it
        kill_leftovers()
    os.write(status_fd, json.dumps(report).encode())
    os.close(status_fd)


if __name__ == "__main__":
    main()
