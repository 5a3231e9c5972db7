"""Warm fork-server (runs inside the sandbox environment; started by runners/worker.py only).

Imports torch once, then serves run requests, one JSON line each on stdin:
  {"workdir": ..., "script": "repro.py", "env": {...}, "cpu_s": N, "as_bytes": N, "fsize_bytes": N}
For each it forks a launcher (new session, child subreaper) that forks the target: rlimits,
fresh cwd/HOME/caches, stdout/stderr into files in the workdir, `runpy.run_path` as __main__.
The launcher reports {"event": "done", "wait_status", "maxrss_kb"} after killing whatever the
target left behind. The server itself never runs user code and never touches CUDA, so every
fork starts from the same pristine, never-compiled state.
"""
import ctypes
import json
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def preload(modules):
    for name in modules:
        __import__(name)
    if "torch" in modules:
        import torch  # noqa: F401
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
        import torch._inductor.config  # noqa: F401


def children_of(pid):
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
    for _ in range(50):
        leftovers = children_of(os.getpid())
        if not leftovers:
            return
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.01)
            except ChildProcessError:
                break


def run_target(request):
    """In the grandchild: become the script, as `python repro.py` would."""
    workdir = request["workdir"]
    os.chdir(workdir)
    out = os.open(os.path.join(workdir, ".pt2_stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(os.path.join(workdir, ".pt2_stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    os.close(err)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if request.get("cpu_s"):
        resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 5))
    if request.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (request["as_bytes"], request["as_bytes"]))
    if request.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize_bytes"], request["fsize_bytes"]))
    os.environ.clear()
    os.environ.update(request["env"])
    import tempfile
    tempfile.tempdir = None
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    if request["env"].get("PYTHONFAULTHANDLER"):
        import faulthandler
        faulthandler.enable()
    script = os.path.join(workdir, request["script"])
    sys.argv = [script]
    sys.path[0] = workdir
    code = 0
    try:
        import runpy
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - exactly what the interpreter would print
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def launcher(request, report_fd):
    """In the child: a subreaper that runs the target and cleans up after it."""
    os.setsid()
    try:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    os.write(report_fd, (json.dumps({"event": "started", "pid": os.getpid()}) + "\n").encode())
    target = os.fork()
    if target == 0:
        os.close(report_fd)
        run_target(request)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(target, signal.SIGKILL))
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except InterruptedError:
            continue
        if pid == target:
            break
    kill_leftovers()
    os.write(report_fd, (json.dumps({"event": "done", "wait_status": status, "maxrss_kb": usage.ru_maxrss}) + "\n").encode())
    os._exit(0)


def main():
    preload(sys.argv[1:])
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing but replies on the reply channel
    reply.write(json.dumps({"event": "ready", "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        reply.flush()
        child = os.fork()
        if child == 0:
            launcher(request, reply.fileno())
        os.waitpid(child, 0)


if __name__ == "__main__":
    main()
