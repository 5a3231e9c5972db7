"""In-sandbox launcher: the first process of the run (PID 1 of the sandbox's PID namespace under
bubblewrap), forks the target with rlimits applied, reports how it ended on a private pipe, and makes
sure nothing it started outlives it.

Usage (by runners/sandbox.py only): python -I -S _launcher.py KEY=VALUE... -- ARGV...
KEYs (integers): status_fd, evidence_fd (-1: none), cpu_s, as_bytes, nproc, fsize_bytes (0: no limit),
term_handler (1 in unsafe mode only: SIGTERM kills the target, then we report).
Report, on status_fd: "WAIT_STATUS MAXRSS_KB".

The script cannot forge the report: the status fd exists only here (every other fd is closed, the
target never gets it), and the launcher is not dumpable, so a process of the same uid cannot open
/proc/1/fd or /proc/1/mem (ptrace and pidfd_getfd are refused by the seccomp filter anyway). As
PID 1 without signal handlers it cannot be killed from inside the namespace.
Standalone on purpose: stdlib only, no imports from the project and no json (its import would double
the `-I -S` start-up).
"""
import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def set_limits(config: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if config.get("cpu_s"):
        resource.setrlimit(resource.RLIMIT_CPU, (config["cpu_s"], config["cpu_s"] + 5))
    if config.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (config["as_bytes"], config["as_bytes"]))
    if config.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["fsize_bytes"], config["fsize_bytes"]))
    if config.get("nproc"):  # tasks, threads included, of this uid in the sandbox's own user namespace
        resource.setrlimit(resource.RLIMIT_NPROC, (config["nproc"], config["nproc"]))


def children_of(pid: int) -> list:
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


def close_other_fds(keep: tuple) -> None:
    """Everything we inherited (bubblewrap's, the caller's) except stdio and our own pipes."""
    keep = sorted({0, 1, 2, *[fd for fd in keep if fd >= 0]})
    start = 0
    for fd in keep + [1 << 20]:
        if fd > start:
            os.closerange(start, fd)
        start = fd + 1


def main() -> None:
    split = sys.argv.index("--")
    config = {key: int(value) for key, _, value in (arg.partition("=") for arg in sys.argv[1:split])}
    argv = sys.argv[split + 1:]
    status_fd, evidence_fd = int(config["status_fd"]), int(config.get("evidence_fd", -1))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.getpid() != 1:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    close_other_fds((status_fd, evidence_fd))
    stop = []  # the target's pid, once there is one (a SIGTERM before that only marks the wish)
    if config.get("term_handler"):
        signal.signal(signal.SIGTERM, lambda *_: kill_quietly(stop[0]) if stop else stop.append(0))
    target = os.fork()
    if target == 0:
        os.close(status_fd)
        if evidence_fd >= 0:
            os.set_inheritable(evidence_fd, True)
        try:
            set_limits(config)
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"sandbox: cannot run {argv[0]}: {exc.strerror}\n")
            os._exit(127)
    if evidence_fd >= 0:
        os.close(evidence_fd)  # the reader sees EOF once the target and its children are gone
    if stop:  # asked to stop (timeout) before the target existed
        kill_quietly(target)
    stop[:] = [target]
    while True:
        pid, status, usage = os.wait4(-1, 0)
        if pid == target:
            break
    if os.getpid() != 1:  # as PID 1 of a namespace, our exit kills everything left in it
        kill_leftovers()
    os.write(status_fd, f"{status} {usage.ru_maxrss}".encode())
    os.close(status_fd)


if __name__ == "__main__":
    main()
