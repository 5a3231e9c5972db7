"""A warm worker: import torch once, fork per run.

Importing torch (with Dynamo and Inductor) costs ~2.5 s here, and minimization or a flakiness
check runs a script dozens of times. `WarmWorker.run` takes the same RunSpec as `sandbox.run` and
returns the same RunResult (with `warm=True`), under the same rules. The server
(`_worker_server.py`) runs inside bubblewrap like a cold run (no network, read-only system, uid
65534, no capabilities, its own PID namespace), and sees only two directories of ours: the runs
directory (each run's workdir, made by us) and the caches directory (one per job). Each run is a
fork of it that first builds namespaces of its own (user, mount, PID, network, IPC, UTS), mounts a
fresh /proc and private /tmp and /dev/shm, binds only its own workdir at /sandbox (and its job's
cache at /cache), hides the others, drops every capability and installs the same seccomp filter a
cold run gets; the script runs in a child of that, whose PID namespace dies with it (see the server's
docstring). A run therefore cannot change what the next one sees: no mount, daemon, file in /tmp
or cache of another job survives it. A server that could not clean up after a run (a process left
over) is replaced before the next run, not reused. The server never runs user code and never
initialises CUDA, so each run is a fork of a pristine, never-compiled interpreter: fresh Dynamo
counters, caches and Inductor state.

Caches: a run with `cache_dir` gets the job's compile cache at /cache, as a cold run does, but the
directory behind it is the worker's (or the pool's) own `caches/<hash of cache_dir>`: the server's
sandbox cannot see directories made after it started. Warm runs of one job share it; a cold run of
the same job uses `cache_dir` itself, so warm and cold runs do not share compiled kernels.

It falls back to a cold `sandbox.run` (and says `warm=False`) whenever a warm run could differ
from a cold one:
- the spec sets environment variables that torch or Python read at start-up (TORCH_LOGS,
  TORCH_TRACE, TORCHINDUCTOR_*, TORCHDYNAMO_*, PYTHONHASHSEED, ...): the server imported torch
  before it saw them. Only `WARM_SAFE_ENV` is re-applied after the import (PYTHONFAULTHANDLER
  enables faulthandler, OMP_NUM_THREADS calls torch.set_num_threads), and a variable set to the
  value every run gets anyway (e.g. PYTHONUNBUFFERED=1) is harmless;
- the spec runs a command (`argv`), another interpreter, in a caller's workdir, with a GPU, or with
  other network isolation or sandbox mode than the worker's;
- CUDA (`run(spec, cuda=True)`): GPU runs are always cold. The server itself never initialises
  CUDA (its preload answers torch's import-time `cuda.is_available()` through NVML, and it refuses
  to serve if a fork of it would be a "bad fork"), so even a CPU run on a GPU host, where Dynamo
  touches CUDA to save its RNG state, works warm; checked on an H100 host;
- the server died: it is restarted once; after that every run is cold.
Runs are serialised (one server, one run at a time); callers may still call from several
threads. For parallel runs use several workers (runners/pool.py).
Known differences from a cold run: warnings torch prints while it is imported (e.g. "Failed to
initialize NumPy") were printed by the server, not the run; the modules torch imports lazily at a
first compile or export (`_warm_imports.txt`, scripts/list_warm_imports.py) are in `sys.modules`
before the script starts, and torch's own exit-time finalizers are skipped; the CPU-time limit
does not count the import; limits are rlimits (a cgroup v2 applies to cold runs only).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import safefs, sandbox, seccomp
from .disk_watch import watch_run
from .sandbox import Prepared, RunResult, RunSpec
from .worker_launch import server_launch

log = logging.getLogger(__name__)

# TRIAGE_TORCH_PROBE is read by the bootstrap in the forked run, after the preload, like a cold run does.
WARM_SAFE_ENV = frozenset({"PYTHONFAULTHANDLER", "OMP_NUM_THREADS", "TRIAGE_TORCH_PROBE"})
# values every run gets from sandbox.build_env; setting them again changes nothing
STARTUP_DEFAULTS = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                    "TORCHINDUCTOR_COMPILE_THREADS": "1"}
START_TIMEOUT_S = 180
KILL_BACKSTOP_S = 10  # after a kill, how long the server gets to report before we kill it too
MAX_RESTARTS = 1
MAX_MESSAGE = 1 << 20


class WorkerUnavailable(RuntimeError):
    """The server could not start, or died; callers fall back to cold runs."""


def warm_safe_env(env) -> bool:
    return all(name in WARM_SAFE_ENV or STARTUP_DEFAULTS.get(name) == value for name, value in env.items())


def cache_key(cache_dir: str) -> str:
    """The name of a job's cache in the worker's caches directory."""
    return hashlib.sha256(os.path.realpath(cache_dir).encode()).hexdigest()[:16]


class WarmWorker:
    """Context manager around one fork-server; `run` has `sandbox.run`'s contract."""

    def __init__(self, preload: tuple[str, ...] = ("torch",), python: str = sys.executable,
                 isolate_network: bool = True, start_timeout_s: float = START_TIMEOUT_S,
                 cache_root: str | None = None, unsafe_no_sandbox: bool = False):
        self.preload = tuple(preload)
        self.python = python
        self.isolate_network = isolate_network
        self.start_timeout_s = start_timeout_s
        self.cache_root = cache_root  # shared by a pool's workers; else the worker's own
        self.unsafe_no_sandbox = unsafe_no_sandbox
        self.restarts = 0  # after the server died
        self.replacements = 0  # after a run it could not clean up after
        self.network: tuple[bool, str] = (False, "not started")
        self.sandbox = ""
        self._proc: subprocess.Popen | None = None
        self._ctrl: socket.socket | None = None
        self._home: Path | None = None
        self._lock = threading.Lock()  # one run at a time
        self._send_lock = threading.Lock()  # kills come from reader threads too
        self._run_active = False
        self._replacing = False  # the server was retired on purpose: the next start is not a restart

    @property
    def network_isolated(self) -> bool:
        return self.network[0]

    @property
    def runs_dir(self) -> Path:
        return self._home / "runs"

    @property
    def caches_dir(self) -> Path:
        return Path(self.cache_root) if self.cache_root else self._home / "caches"

    # --- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> "WarmWorker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server and wait until it has imported the preload. Raises WorkerUnavailable."""
        self._home = Path(tempfile.mkdtemp(prefix="pt2-worker-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ctrl = ours
        try:
            argv, kwargs, env, passed, cwd = self._server_command(theirs.fileno())
        except (sandbox.SandboxUnavailable, OSError, seccomp.UnsupportedArchitecture) as exc:
            theirs.close()
            self.close()
            raise WorkerUnavailable(f"cannot start the warm worker: {exc}") from None
        with open(self._home / "server.log", "wb") as server_log:
            try:
                self._proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=server_log,
                                              stderr=server_log, start_new_session=True, pass_fds=tuple(passed),
                                              **kwargs)
            except OSError as exc:
                self.close()
                raise WorkerUnavailable(f"cannot start the warm worker: {exc}") from None
            finally:
                for fd in passed:
                    if fd != theirs.fileno():
                        os.close(fd)
                theirs.close()
        try:
            ready = self._receive(time.monotonic() + self.start_timeout_s)
        except WorkerUnavailable:
            ready = None
        if ready is None or ready.get("event") != "ready":
            reason = (ready or {}).get("problems") or self._server_log_tail() or "no answer"
            self.close()
            raise WorkerUnavailable(f"the warm worker did not start: {reason}")
        if self.network[0] and not ready.get("pid_namespace"):
            log.warning("warm worker: expected to be PID 1 of its own namespace, but is not")
        if ready.get("threads"):
            log.info("warm worker: the preload started %d threads (%s); forking anyway",
                     len(ready["threads"]), ", ".join(sorted(set(ready["threads"]))))
        log.info("warm worker ready (preloaded %s)", ", ".join(self.preload) or "nothing")

    def _server_command(self, ctrl_fd: int):
        """(argv, Popen kwargs, env, fds to pass, cwd) of the server, in its sandbox (worker_launch.py);
        records the isolation its runs will report."""
        self.runs_dir.mkdir()
        self.caches_dir.mkdir(parents=True, exist_ok=True)
        launch = server_launch(python=self.python, preload=self.preload, ctrl_fd=ctrl_fd, home=self._home,
                               runs=self.runs_dir, caches=self.caches_dir, isolate_network=self.isolate_network,
                               unsafe_no_sandbox=self.unsafe_no_sandbox)
        self.network, self.sandbox = launch.network, launch.sandbox
        return launch.argv, launch.popen_kwargs, launch.env, launch.passed_fds, launch.cwd

    def close(self) -> None:
        """Stop the server: closing its socket makes it kill any run and exit; SIGKILL after 2 s."""
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                sandbox.signal_group(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
            sandbox.signal_group(self._proc.pid, signal.SIGKILL)  # the bwrap/server group, if anything is left
            self._proc = None
        if self._home is not None:
            problem = safefs.remove_tree(self._home)
            if problem:
                log.warning("warm worker: %s", problem)
            self._home = None

    def _server_log_tail(self) -> str:
        try:
            return (self._home / "server.log").read_text(errors="replace")[-2000:].strip()
        except (OSError, TypeError):
            return ""

    def _ensure_server(self) -> bool:
        """A live server, restarting a dead one at most MAX_RESTARTS times over the worker's life
        (a server retired after a run it could not clean up after is replaced without counting)."""
        if self.alive():
            return True
        if self._proc is not None:
            log.warning("warm worker died: %s", self._server_log_tail()[-500:] or "no log")
            self.close()
        if self._replacing:
            self._replacing = False
        else:
            if self.restarts >= MAX_RESTARTS:
                return False
            self.restarts += 1
        try:
            self.start()
            return True
        except WorkerUnavailable as exc:
            log.warning("warm worker could not be started (%s); running cold from now on", exc)
            self.restarts = MAX_RESTARTS
            return False

    # --- runs ----------------------------------------------------------------------------------
    def can_run_warm(self, spec: RunSpec, cuda: bool = False) -> bool:
        """Whether a warm run gives what a cold run of `spec` would (see the module docstring)."""
        return (not cuda and not spec.gpu and spec.argv is None and spec.script is not None
                and spec.python == self.python and spec.workdir is None
                and spec.isolate_network == self.isolate_network
                and spec.unsafe_no_sandbox == self.unsafe_no_sandbox and warm_safe_env(spec.env))

    def run(self, spec: RunSpec, cuda: bool = False) -> RunResult:
        """Run warm when that gives the same result as cold; otherwise (or if the server is gone) cold."""
        if cuda and not spec.gpu:
            spec = dataclasses.replace(spec, gpu=True)
        if not self.can_run_warm(spec, cuda):
            return sandbox.run(spec)
        with self._lock:
            for _ in range(1 + MAX_RESTARTS):
                if not self._ensure_server():
                    break
                try:
                    return self._run_warm(spec)
                except WorkerUnavailable as exc:
                    log.warning("warm run failed (%s)", exc)
                    self.close_server_only()
        return sandbox.run(spec)

    def close_server_only(self) -> None:
        """Forget a broken server (killing what is left of it)."""
        if self._proc is not None:
            sandbox.signal_group(self._proc.pid, signal.SIGKILL)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.close()

    def _run_warm(self, spec: RunSpec) -> RunResult:
        sandbox._validate(spec)
        prepared = sandbox.prepare(spec, parent=str(self.runs_dir))
        try:
            result, clean = self._execute(spec, prepared)
            if spec.keep_workdir:  # out of the worker's directory, which goes when the worker does
                kept = tempfile.mkdtemp(prefix="pt2-sandbox-")
                os.rename(prepared.workdir, kept)
                result = dataclasses.replace(result, workdir=kept)
        except BaseException:
            prepared.cleanup(spec)
            raise
        problem = prepared.cleanup(spec)
        if problem:
            result = dataclasses.replace(result, cleanup_error=problem)
        if not clean:
            log.warning("warm worker: a process of the last run could not be reaped; replacing the server")
            self.replacements += 1
            self.close_server_only()
            self._replacing = True
        return result

    def _request(self, spec: RunSpec, prepared: Prepared) -> dict:
        request = {"op": "run", "script": "repro.py", "env": prepared.env, "cpu_s": spec.cpu_time_s or 0,
                   "as_bytes": spec.address_space_bytes or 0, "fsize_bytes": spec.max_file_bytes or 0,
                   "term_grace_s": sandbox.TERM_GRACE_S, "tmp_bytes": spec.tmp_bytes}
        if self.unsafe_no_sandbox:
            return {**request, "workdir": str(prepared.workdir), "cwd": prepared.inside_cwd, "nproc": 0}
        cache = None
        if spec.cache_dir:
            cache = cache_key(spec.cache_dir)
            uid, gid, drop = sandbox.sandbox_owner()
            sandbox.prepare_job_cache(self.caches_dir / cache, (uid, gid) if drop else None)
        return {**request, "run_dir": prepared.workdir.name, "cache_dir": cache, "cwd": spec.cwd or "",
                "nproc": spec.max_processes or 0}

    def _execute(self, spec: RunSpec, prepared: Prepared) -> tuple[RunResult, bool]:
        limits: list[str] = []
        request = self._request(spec, prepared)
        (out_r, out_w), (err_r, err_w), (ev_r, ev_w) = os.pipe(), os.pipe(), os.pipe()
        started = time.monotonic()
        try:
            self._send(request, (out_w, err_w, ev_w))
        except OSError as exc:
            for fd in (out_r, err_r, ev_r):
                os.close(fd)
            raise WorkerUnavailable(f"cannot reach the server: {exc}") from None
        finally:
            for fd in (out_w, err_w, ev_w):
                os.close(fd)
        self._run_active = True

        def flood() -> None:
            limits.append("output")
            self._kill_run()

        def disk_taken() -> None:
            limits.append("disk")
            self._kill_run()

        readers = sandbox.start_readers((out_r, err_r), spec.output_cap_bytes, flood)
        evidence = sandbox.start_evidence_reader(ev_r)
        job_cache = str(self.caches_dir / request["cache_dir"]) if request.get("cache_dir") else None
        try:
            with watch_run((str(prepared.workdir), job_cache), spec.max_disk_bytes, disk_taken,
                           max_files=spec.max_disk_files, job_cache=job_cache):
                done = self._await_done(spec, started, limits)
        finally:
            with self._send_lock:
                self._run_active = False
        for reader in readers:
            reader.join(timeout=10)
        evidence.join(timeout=10)
        status = done["wait_status"] if done else None
        peak_rss = done["maxrss_kb"] * 1024 if done and done.get("maxrss_kb") is not None else None
        result = sandbox.build_result(spec, prepared, status, peak_rss, readers, limits, time.monotonic() - started,
                                      self.network, warm=True, evidence=evidence, sandbox=self.sandbox)
        if done is not None and status is None and not limits:
            raise WorkerUnavailable(f"the warm run could not be isolated: {result.stderr.strip()[-500:]}")
        return result, bool(done and done.get("clean", True))

    def _await_done(self, spec: RunSpec, started: float, limits: list[str]) -> dict | None:
        """The server's report; on timeout ask it to kill the run, and kill the server if it can't."""
        done = self._receive(started + spec.timeout_s)
        if done is None:
            limits.append("timeout")
            self._kill_run()
            done = self._receive(time.monotonic() + sandbox.TERM_GRACE_S + KILL_BACKSTOP_S)
            if done is None:
                log.warning("warm worker did not stop a timed-out run; killing the server")
                self.close_server_only()
        return done

    # --- the socket ----------------------------------------------------------------------------
    def _send(self, message: dict, fds: tuple[int, ...] = ()) -> None:
        with self._send_lock:
            if self._ctrl is None:
                raise OSError("no server")
            socket.send_fds(self._ctrl, [json.dumps(message).encode()], list(fds))

    def _kill_run(self) -> None:
        with self._send_lock:  # only while its run is on: a late kill must not hit the next run
            if self._run_active and self._ctrl is not None:
                try:
                    self._ctrl.send(b'{"op": "kill"}')
                except OSError:
                    pass

    def _receive(self, deadline: float) -> dict | None:
        """The next message from the server, or None at the deadline. WorkerUnavailable if it is gone."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._ctrl], [], [], remaining)
            if ready:
                break
        try:
            data = self._ctrl.recv(MAX_MESSAGE)
        except OSError as exc:
            raise WorkerUnavailable(f"the warm worker's socket failed: {exc}") from None
        if not data:
            raise WorkerUnavailable("the warm worker exited")
        return json.loads(data)


__all__ = ["WarmWorker", "WorkerUnavailable", "WARM_SAFE_ENV", "warm_safe_env"]
