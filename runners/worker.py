"""A warm worker: import torch once, fork per run.

Importing torch (with Dynamo and Inductor) costs ~2.5 s here, and minimization or a flakiness
check runs a script dozens of times. `WarmWorker.run` takes the same RunSpec as `sandbox.run` and
returns the same RunResult (with `warm=True`), under the same rules: scrubbed environment, new
network/PID/mount namespaces, rlimits, a fresh workdir, capped output read while it is written,
a timeout that SIGTERMs then SIGKILLs, every leftover process killed. The server
(`_worker_server.py`) never runs user code and never initialises CUDA, so each run is a fork of
a pristine, never-compiled interpreter: fresh Dynamo counters, caches and Inductor state.

It falls back to a cold `sandbox.run` (and says `warm=False`) whenever a warm run could differ
from a cold one:
- the spec sets environment variables that torch or Python read at start-up (TORCH_LOGS,
  TORCH_TRACE, TORCHINDUCTOR_*, TORCHDYNAMO_*, PYTHONHASHSEED, ...): the server imported torch
  before it saw them. Only `WARM_SAFE_ENV` is re-applied after the import (PYTHONFAULTHANDLER
  enables faulthandler, OMP_NUM_THREADS calls torch.set_num_threads), and a variable set to the
  value every run gets anyway (e.g. PYTHONUNBUFFERED=1) is harmless;
- the spec runs a command (`argv`), another interpreter, or other network isolation than the worker's;
- CUDA (`run(spec, cuda=True)`): GPU runs are always cold. The server itself never initialises
  CUDA (its preload answers torch's import-time `cuda.is_available()` through NVML, and it refuses
  to serve if a fork of it would be a "bad fork"), so even a CPU run on a GPU host, where Dynamo
  touches CUDA to save its RNG state, works warm; checked on an H100 host;
- the server died: it is restarted once; after that every run is cold.
Runs are serialised (one server, one run at a time); callers may still call from several
threads. For parallel runs use several workers (runners/pool.py).
Known differences from a cold run: warnings torch prints while it is imported (e.g. "Failed to
initialize NumPy") were printed by the server, not the run; the CPU-time limit does not count
the import.
"""
from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import sandbox
from .sandbox import Prepared, RunResult, RunSpec

log = logging.getLogger(__name__)

SERVER = Path(__file__).with_name("_worker_server.py")
WARM_SAFE_ENV = frozenset({"PYTHONFAULTHANDLER", "OMP_NUM_THREADS"})
# values every run gets from sandbox.build_env; setting them again changes nothing
STARTUP_DEFAULTS = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
START_TIMEOUT_S = 180
KILL_BACKSTOP_S = 10  # after a kill, how long the server gets to report before we kill it too
MAX_RESTARTS = 1
MAX_MESSAGE = 1 << 20


class WorkerUnavailable(RuntimeError):
    """The server could not start, or died; callers fall back to cold runs."""


def warm_safe_env(env) -> bool:
    return all(name in WARM_SAFE_ENV or STARTUP_DEFAULTS.get(name) == value for name, value in env.items())


class WarmWorker:
    """Context manager around one fork-server; `run` has `sandbox.run`'s contract."""

    def __init__(self, preload: tuple[str, ...] = ("torch",), python: str = sys.executable,
                 isolate_network: bool = True, start_timeout_s: float = START_TIMEOUT_S):
        self.preload = tuple(preload)
        self.python = python
        self.isolate_network = isolate_network
        self.start_timeout_s = start_timeout_s
        self.restarts = 0
        self.network: tuple[bool, str] = (False, "not started")
        self._proc: subprocess.Popen | None = None
        self._ctrl: socket.socket | None = None
        self._home: Path | None = None
        self._lock = threading.Lock()  # one run at a time
        self._send_lock = threading.Lock()  # kills come from reader threads too
        self._run_active = False

    @property
    def network_isolated(self) -> bool:
        return self.network[0]

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
        self.network = sandbox.isolation_for(self.isolate_network)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = sandbox.unshare_prefix(self.network[0]) + [self.python, str(SERVER), str(theirs.fileno()), *self.preload]
        self._ctrl = ours
        with open(self._home / "server.log", "wb") as server_log:
            try:
                self._proc = subprocess.Popen(argv, cwd=self._home, env=sandbox.build_env({}, self._home),
                                              stdin=subprocess.DEVNULL, stdout=server_log, stderr=server_log,
                                              start_new_session=True, pass_fds=(theirs.fileno(),))
            except OSError as exc:
                self.close()
                raise WorkerUnavailable(f"cannot start the warm worker: {exc}") from None
            finally:
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
            sandbox.signal_group(self._proc.pid, signal.SIGKILL)  # the unshare/server group, if anything is left
            self._proc = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def _server_log_tail(self) -> str:
        try:
            return (self._home / "server.log").read_text(errors="replace")[-2000:].strip()
        except (OSError, TypeError):
            return ""

    def _ensure_server(self) -> bool:
        """A live server, restarting a dead one at most MAX_RESTARTS times over the worker's life."""
        if self.alive():
            return True
        if self._proc is not None:
            log.warning("warm worker died: %s", self._server_log_tail()[-500:] or "no log")
            self.close()
        if self.restarts >= MAX_RESTARTS:
            return False
        self.restarts += 1
        try:
            self.start()
            return True
        except WorkerUnavailable as exc:
            log.warning("warm worker could not be restarted (%s); running cold from now on", exc)
            return False

    # --- runs ----------------------------------------------------------------------------------
    def can_run_warm(self, spec: RunSpec, cuda: bool = False) -> bool:
        """Whether a warm run gives what a cold run of `spec` would (see the module docstring)."""
        return (not cuda and spec.argv is None and spec.script is not None and spec.python == self.python
                and spec.isolate_network == self.isolate_network and warm_safe_env(spec.env))

    def run(self, spec: RunSpec, cuda: bool = False) -> RunResult:
        """Run warm when that gives the same result as cold; otherwise (or if the server is gone) cold."""
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
        """Forget a broken server (killing what is left of it) but keep counting restarts."""
        if self._proc is not None:
            sandbox.signal_group(self._proc.pid, signal.SIGKILL)
        self.close()

    def _run_warm(self, spec: RunSpec) -> RunResult:
        prepared = sandbox.prepare(spec)
        try:
            return self._execute(spec, prepared)
        finally:
            prepared.cleanup(spec)

    def _execute(self, spec: RunSpec, prepared: Prepared) -> RunResult:
        limits: list[str] = []
        request = {"op": "run", "workdir": str(prepared.workdir), "script": "repro.py", "env": prepared.env,
                   "cpu_s": spec.cpu_time_s or 0, "as_bytes": spec.address_space_bytes or 0,
                   "term_grace_s": sandbox.TERM_GRACE_S}
        (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
        started = time.monotonic()
        try:
            self._send(request, (out_w, err_w))
        except OSError as exc:
            os.close(out_r)
            os.close(err_r)
            raise WorkerUnavailable(f"cannot reach the server: {exc}") from None
        finally:
            os.close(out_w)
            os.close(err_w)
        self._run_active = True

        def flood() -> None:
            limits.append("output")
            self._kill_run()

        readers = sandbox.start_readers((out_r, err_r), spec.output_cap_bytes, flood)
        try:
            done = self._await_done(spec, started, limits)
        finally:
            with self._send_lock:
                self._run_active = False
        for reader in readers:
            reader.join(timeout=10)
        status = done["wait_status"] if done else None
        peak_rss = done["maxrss_kb"] * 1024 if done else None
        return sandbox.build_result(spec, prepared, status, peak_rss, readers, limits, time.monotonic() - started,
                                    self.network, warm=True)

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
