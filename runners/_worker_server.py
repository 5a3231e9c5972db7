"""Warm fork-server: the process runners/worker.py starts (and nothing else does).

    python _worker_server.py CTRL_FD CONFIG_JSON MODULE...

It imports MODULE... once (for torch also Dynamo and Inductor, without compiling anything), then
serves run requests on CTRL_FD, a SOCK_SEQPACKET unix socket: one JSON message per packet.

  -> {"op": "run", "run_dir", "cache_dir", "cwd", "script", "env", "cpu_s", "as_bytes", "nproc",
      "fsize_bytes", "tmp_bytes", "term_grace_s"}
     with three file descriptors attached (SCM_RIGHTS): the write ends of the stdout, stderr and
     evidence pipes
  -> {"op": "kill"}                       stop the current run (timeout, output flood)
  <- {"event": "ready", ...}              once, after the preload
  <- {"event": "done", "wait_status", "maxrss_kb", "clean"}   once per run; clean=false: a process
     of the run could not be reaped, so the owner replaces this server instead of reusing it

CONFIG_JSON: {"mode": "bwrap" | "unsafe", "seccomp": hex of the strict filter program, "runs": the
directory holding every run's workdir, "caches": the one holding the jobs' caches, "workdir" and
"cache": where a run sees its own, "home", "inductor_tmp": Inductor's default cache directory, where
a run with a job cache gets the job's `inductor_tmp` (precompiled headers, as for a cold run), and "seed":
the read-only store of prebuilt ISA test libraries (runners/inductor_seed.py), when there is one}.
The preload asks Inductor's questions about the machine once (_worker_preload.warm_machine_answers);
every fork inherits the answers.

In "bwrap" mode the server itself runs inside bubblewrap (as a cold run does, minus --disable-userns
and with the seccomp "server" profile, because its children build namespaces), and each run is:

  server ─fork─> C1: setsid; unshare(user, mount, pid, net, ipc, uts); map uid/gid 65534 to itself
                 └─fork─> C2, PID 1 of the new PID namespace: a fresh /proc, size-capped tmpfs on
                          /tmp and /dev/shm, the run's own workdir bound at /sandbox (and its job's
                          cache at /cache), every other run's directory hidden under an empty tmpfs,
                          loopback up; then all capabilities dropped (bounding set too),
                          not dumpable, no_new_privs, the strict seccomp filter
                          └─fork─> T: rlimits, the scrubbed environment, repro.py run by _bootstrap
                                   as __main__, exactly as a cold run does

C2 reports T's wait status on a pipe only it holds (T closes its copy before any user code runs),
and when C2 exits the kernel kills everything left in its namespace. So a run's mounts, daemons,
files in /tmp and everything else it did die with it; the server's own namespace never changes.
The server never runs user code and never initialises CUDA, so every fork starts from the same
pristine, never-compiled state. "unsafe" mode (no bubblewrap) keeps the old, weaker behaviour: the
target is a direct child with rlimits, in the server's unshare namespaces if it has any.

Cleanup: the server is PID 1 of its own PID namespace (or, without namespaces, a child subreaper),
so everything a run leaves behind is re-parented to it; after each run it kills and reaps all its
children, then checks that no process but itself is left, before it reports.
Standalone on purpose (stdlib only, no project imports but the files beside it, which the owner
binds next to this one: _bootstrap.py, and the pieces split out of this module, _worker_preload.py,
_worker_isolation.py, _worker_target.py and _worker_reaper.py).
"""
import json
import os
import resource
import select
import signal
import socket
import sys
import time

from _worker_isolation import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, build_view, enter_namespaces, libc, lock_down
from _worker_preload import fork_hazards, preload, read_warm_imports, thread_names
from _worker_reaper import alone, kill_group, kill_leftovers
from _worker_target import become_target

MAX_MESSAGE = 1 << 20


# --- messages ------------------------------------------------------------------------------------
def send(ctrl, message):
    ctrl.sendall(json.dumps(message).encode())


def receive(ctrl):
    """(message, fds), or (None, []) once the other side is gone."""
    data, fds, _, _ = socket.recv_fds(ctrl, MAX_MESSAGE, 3)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


# --- one run's fork tree (bwrap mode) -------------------------------------------------------------
def isolated_run(request, fds, status_w, config):
    """C1 (this fork of the server): namespaces, then C2; never returns."""
    try:
        os.setsid()
        enter_namespaces()
        init = os.fork()
    except BaseException as exc:  # noqa: BLE001 - report, never fall back into the server loop
        os.write(fds[1], f"warm worker: cannot isolate the run: {exc!r}\n".encode())
        os._exit(126)
    if init:
        for fd in (*fds, status_w):
            os.close(fd)
        _, status = os.waitpid(init, 0)
        os._exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # C1 killed (a kill, a timeout): the namespace goes
        build_view(request, config)
        lock_down(bytes.fromhex(config["seccomp"]))
    except BaseException as exc:  # noqa: BLE001
        os.write(fds[1], f"warm worker: cannot isolate the run: {exc!r}\n".encode())
        os._exit(126)
    run_as_init(request, fds, status_w)


def run_as_init(request, fds, status_w):
    """C2, PID 1: fork the target, reap everything, report the target's ending; our exit ends the rest."""
    target = os.fork()
    if target == 0:
        os.close(status_w)
        become_target(request, fds)
    for fd in fds:
        os.close(fd)
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == target:
            break
    os.write(status_w, json.dumps({"wait_status": status, "maxrss_kb": usage.ru_maxrss}).encode())
    os.close(status_w)
    os._exit(0)


# --- the server --------------------------------------------------------------------------------------
def supervise(ctrl, target, grace_s):
    """Wait for the target; a "kill" message gets it SIGTERM, then SIGKILL after `grace_s`.
    Returns (wait status, rusage), or None if our owner went away (the server should exit)."""
    pidfd = os.pidfd_open(target) if hasattr(os, "pidfd_open") else None
    term_at = None
    try:
        while True:
            reaped, status, usage = os.wait4(target, os.WNOHANG)
            if reaped:
                return status, usage
            waits = [ctrl] + ([pidfd] if pidfd is not None else [])
            timeout = 0.01 if pidfd is None else None
            if term_at is not None:
                timeout = max(0.0, min(timeout or grace_s, term_at + grace_s - time.monotonic()))
            ready, _, _ = select.select(waits, [], [], timeout)
            if ctrl in ready:
                message, fds = receive(ctrl)
                for fd in fds:
                    os.close(fd)
                if message is None:
                    kill_group(target, signal.SIGKILL)
                    return None
                if message.get("op") == "kill" and term_at is None:
                    kill_group(target, signal.SIGTERM)
                    term_at = time.monotonic()
            if term_at is not None and time.monotonic() >= term_at + grace_s:
                kill_group(target, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve(ctrl, request, fds, config):
    """One run: fork, supervise, clean up, report. False if the server should exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    isolated = config["mode"] == "bwrap"
    status_r, status_w = os.pipe() if isolated else (None, None)
    request = dict(request, isolated=isolated)
    if isolated:
        request["workdir"] = config["workdir"]
        request["cwd"] = os.path.join(config["workdir"], *[p for p in (request.get("cwd") or "").split("/") if p])
    child = os.fork()
    if child == 0:
        ctrl.close()
        if isolated:
            os.close(status_r)
            isolated_run(request, fds, status_w, config)
        become_target(request, fds)
    for fd in fds:
        os.close(fd)
    if isolated:
        os.close(status_w)
    outcome = supervise(ctrl, child, float(request.get("term_grace_s", 1.0)))
    kill_leftovers()
    report = read_report(status_r) if isolated else None
    if outcome is None:
        return False
    status, usage = outcome
    if isolated:
        status, maxrss = (report["wait_status"], report["maxrss_kb"]) if report else (None, None)
    else:
        maxrss = usage.ru_maxrss
    clean = alone()
    send(ctrl, {"event": "done", "wait_status": status, "maxrss_kb": maxrss, "clean": clean})
    return clean


def read_report(fd):
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        report = json.loads(b"".join(chunks))
    except ValueError:
        return None
    if isinstance(report, dict) and type(report.get("wait_status")) is int and type(report.get("maxrss_kb")) is int:
        return report
    return None


def main():
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    config = json.loads(sys.argv[2])
    modules = tuple(sys.argv[3:])
    if os.getpid() != 1:
        try:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a stray Ctrl-C must not end the server
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    preload(modules, config.get("seed"), read_warm_imports(os.path.dirname(os.path.abspath(__file__))))
    hazards = fork_hazards()
    send(ctrl, {"event": "ready" if not hazards else "unsafe", "problems": hazards,
                "pid_namespace": os.getpid() == 1, "threads": thread_names(), "mode": config["mode"]})
    if hazards:
        return
    while True:
        request, fds = receive(ctrl)
        if request is None:
            return
        if request.get("op") != "run":  # e.g. a kill that raced with the end of its run
            for fd in fds:
                os.close(fd)
            continue
        if not serve(ctrl, request, fds, config):
            return


if __name__ == "__main__":
    main()
    os._exit(0)  # skip interpreter shutdown (torch's takes seconds); there is nothing to flush
