"""Warm fork-server: the process runners/worker.py starts (and nothing else does).

    python _worker_server.py CTRL_FD MODULE...

It imports MODULE... once (for torch also Dynamo and Inductor, without compiling anything), then
serves run requests on CTRL_FD, a SOCK_SEQPACKET unix socket: one JSON message per packet.

  -> {"op": "run", "workdir", "script", "env", "cpu_s", "as_bytes", "term_grace_s"}
     with two file descriptors attached (SCM_RIGHTS): the write ends of the stdout and stderr pipes
  -> {"op": "kill"}                       stop the current run (timeout, output flood)
  <- {"event": "ready", ...}              once, after the preload
  <- {"event": "done", "wait_status", "maxrss_kb"}   once per run

Per run it forks the target, which starts a new session, applies the rlimits, enters the workdir,
takes the scrubbed environment and runs the script as __main__ exactly as `python repro.py`
would (traceback and exit status included). The server itself never runs user code and never
initialises CUDA, so every fork starts from the same pristine, never-compiled state.

Cleanup: the server is PID 1 of its own PID namespace (or, without namespaces, a child subreaper),
so everything the target leaves behind is re-parented to it; after each run it kills and reaps
all its children before it reports. A PID 1 only receives signals it has handlers for, so the
script cannot kill the server from inside the namespace.
Standalone on purpose (stdlib only, no project imports): it runs under whichever Python the repro uses.
"""
import atexit
import ctypes
import json
import os
import resource
import select
import signal
import socket
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20


# --- preload -------------------------------------------------------------------------------------
def preload(modules):
    """Import what every run would import anyway; compile nothing, and never touch CUDA.

    Some imports ask `torch.cuda.is_available()` (torch._inductor.runtime.benchmarking does, at
    import): through the CUDA runtime that initialises the driver and marks every later fork
    "bad" (the child then fails with "Cannot re-initialize CUDA in forked subprocess", even for a
    CPU script, as soon as Dynamo saves the CUDA RNG state). PYTORCH_NVML_BASED_CUDA_CHECK=1
    makes torch answer through NVML instead, with the same answer; it is set only while importing
    (runs get their own environment)."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        for name in modules:
            __import__(name)
        if "torch" in modules:
            import torch  # noqa: F401
            import torch._dynamo  # noqa: F401
            import torch._inductor.compile_fx  # noqa: F401
            import torch._inductor.config  # noqa: F401
    finally:
        del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]


def fork_hazards():
    """Reasons a fork of this process could not be a faithful run: CUDA initialised here, or a
    child that torch considers a bad fork (asked in a throw-away child, so any cause is caught)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    if torch.cuda.is_initialized():
        return ["CUDA was initialised by the preload"]
    in_bad_fork = getattr(torch.cuda, "_is_in_bad_fork", None)
    if in_bad_fork is None:
        return []
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write_fd, b"1" if in_bad_fork() else b"0")
        os._exit(0)
    os.close(write_fd)
    answer = os.read(read_fd, 1)
    os.close(read_fd)
    os.waitpid(child, 0)
    return ["a fork of the preloaded server cannot use CUDA (torch's bad-fork flag is set)"] if answer != b"0" else []


def thread_names():
    """Threads the preload started. Not refused: BLAS pools (OpenBLAS starts one per core when numpy
    is imported) handle fork with pthread_atfork, and forking such a process is what
    multiprocessing's fork start method does too; reported so the owner can log it."""
    names = []
    for task in sorted(os.listdir("/proc/self/task"), key=int)[1:]:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                names.append(comm.read().strip())
        except OSError:
            pass
    return names


# --- messages ------------------------------------------------------------------------------------
def send(ctrl, message):
    ctrl.sendall(json.dumps(message).encode())


def receive(ctrl):
    """(message, fds), or (None, []) once the other side is gone."""
    data, fds, _, _ = socket.recv_fds(ctrl, MAX_MESSAGE, 2)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


# --- the target (in the forked child) ----------------------------------------------------------------
def become_target(request, fds):
    """Turn this fork into `python repro.py` in the request's workdir; never returns."""
    try:
        os.setsid()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the server ignores it; python does not
        set_limits(request)
        os.chdir(request["workdir"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile
        tempfile.tempdir = None  # re-read TMPDIR
        apply_env_after_import(request["env"])
        script = os.path.join(request["workdir"], request["script"])
        sys.argv = [request["script"]]
        sys.path[0] = request["workdir"]
    except BaseException as exc:  # noqa: BLE001 - report, never fall back into the server loop
        os.write(2, f"warm worker: cannot start the run: {exc!r}\n".encode())
        os._exit(126)
    finish(run_as_main(script))


def set_limits(request):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if request.get("cpu_s"):  # a fork starts with zero CPU time, so this counts from here
        resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 5))
    if request.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (request["as_bytes"], request["as_bytes"]))


def apply_env_after_import(env):
    """The few variables a warm run can still honour after the preload (worker.WARM_SAFE_ENV)."""
    if env.get("PYTHONFAULTHANDLER"):
        import faulthandler
        faulthandler.enable()
    torch = sys.modules.get("torch")
    threads = env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


def run_as_main(script):
    """Exit status of running `script` as __main__, printing an uncaught exception like python does."""
    try:
        exec_as_main(script)
    except SystemExit as exc:
        return exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - exactly what the interpreter would print
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next  # drop our own frames: the traceback starts at <module>
        # (none left for a SyntaxError in the script: python prints no traceback for it either)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        if isinstance(exc, KeyboardInterrupt):
            return -signal.SIGINT
        return 1
    return 0


def exec_as_main(script):
    """What `python script` does: a new __main__ (for good: pickling and atexit handlers see it),
    __file__ absolute, sys.argv[0] as given, the source compiled under its own file name."""
    import builtins
    import importlib.machinery
    import types
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def exit_status(exc):
    """What the interpreter exits with for SystemExit(code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:  # noqa: BLE001
        pass
    return 1


def finish(code):
    """Interpreter shutdown, minus the parts that would touch the server's state: wait for
    non-daemon threads, run atexit handlers, flush stdio, then leave without unwinding."""
    try:
        import threading
        threading._shutdown()
    except Exception:  # noqa: BLE001
        pass
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 120
    if code < 0:  # died of a signal, as python does after KeyboardInterrupt
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


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


def serve(ctrl, request, fds):
    """One run: fork the target, supervise it, clean up, report. False if the server should exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.fork()
    if target == 0:
        ctrl.close()
        become_target(request, fds)
    for fd in fds:
        os.close(fd)
    outcome = supervise(ctrl, target, float(request.get("term_grace_s", 1.0)))
    kill_leftovers()
    if outcome is None:
        return False
    status, usage = outcome
    send(ctrl, {"event": "done", "wait_status": status, "maxrss_kb": usage.ru_maxrss})
    return True


def main():
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    modules = tuple(sys.argv[2:])
    try:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a stray Ctrl-C must not end the server
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    preload(modules)
    hazards = fork_hazards()
    send(ctrl, {"event": "ready" if not hazards else "unsafe", "problems": hazards,
                "pid_namespace": os.getpid() == 1, "threads": thread_names()})
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
        if not serve(ctrl, request, fds):
            return


if __name__ == "__main__":
    main()
    os._exit(0)  # skip interpreter shutdown (torch's takes seconds); there is nothing to flush
