"""Cleaning up after a warm run: kill and reap whatever the run left behind (its orphans re-parent
to the server), then check that nothing but the server is left, so the next run starts alone.

Runs inside the server's sandbox; imported by `_worker_server.py` from beside it. Standalone on
purpose: stdlib only, no project imports.
"""
import os
import signal
import time


def kill_group(pid, sig):
    for kill in (os.killpg, os.kill):  # the group, and the target itself if it has no group yet
        try:
            kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    if int(stat.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def kill_leftovers():
    """Kill and reap every child (orphans of the run re-parent to us) until none are left."""
    me = os.getpid()
    for _ in range(100):
        reap_zombies()
        leftovers = children_of(me)
        if not leftovers:
            return
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1
        while children_of(me) and time.monotonic() < deadline:
            if not reap_zombies():
                time.sleep(0.005)


def reap_zombies():
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped += 1


def alone():
    """Whether no process but this one is left: in our own PID namespace that means /proc lists only
    us (a run's namespace, nested in ours, shows there too); elsewhere, that we have no children."""
    me = os.getpid()
    if me != 1:
        return not children_of(me)
    deadline = time.monotonic() + 2
    while True:
        others = [e for e in os.listdir("/proc") if e.isdigit() and int(e) != me]
        if not others or time.monotonic() > deadline:
            return not others
        reap_zombies()
        time.sleep(0.005)
