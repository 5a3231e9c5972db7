"""The target of a warm run: the fork that becomes `python repro.py` in the run's workdir, with the
run's limits and environment, run by _bootstrap exactly as a cold run is.

Runs inside the server's sandbox; imported by `_worker_server.py` from beside it. Standalone on
purpose: stdlib only, no project imports but the files beside it.
"""
import os
import resource
import signal
import sys

import _bootstrap
from _worker_isolation import PR_SET_DUMPABLE, libc


def become_target(request, fds):
    """Turn this fork into `python repro.py` in the run's workdir; never returns."""
    evidence_fd = -1
    try:
        if request.get("isolated"):
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the script's own /proc/self, as after exec
        else:
            os.setsid()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        evidence_fd = os.dup(fds[2]) if len(fds) > 2 else -1
        for fd in fds:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the server ignores it; python does not
        set_limits(request)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile
        tempfile.tempdir = None  # re-read TMPDIR
        apply_env_after_import(request["env"])
        script = os.path.join(request["workdir"], request["script"])
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(script)
    except BaseException as exc:  # noqa: BLE001 - report, never fall back into the server loop
        os.write(2, f"warm worker: cannot start the run: {exc!r}\n".encode())
        os._exit(126)
    _bootstrap.finish(_bootstrap.run_as_main(script, evidence_fd))


def set_limits(request):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if request.get("cpu_s"):  # a fork starts with zero CPU time, so this counts from here
        resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 5))
    if request.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (request["as_bytes"], request["as_bytes"]))
    if request.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize_bytes"], request["fsize_bytes"]))
    if request.get("nproc"):
        resource.setrlimit(resource.RLIMIT_NPROC, (request["nproc"], request["nproc"]))


def apply_env_after_import(env):
    """The few variables a warm run can still honour after the preload (worker.WARM_SAFE_ENV)."""
    if env.get("PYTHONFAULTHANDLER"):
        import faulthandler
        faulthandler.enable()
    torch = sys.modules.get("torch")
    threads = env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
