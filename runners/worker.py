"""A warm worker: import torch once, fork per run.

Importing torch (with Dynamo and Inductor) costs ~3 s here, and minimization or a flakiness check
runs a script dozens of times. `WarmWorker.run` takes the same RunSpec as `sandbox.run` and
returns the same RunResult (with `warm=True`), under the same rules: scrubbed environment, no
network, rlimits, a fresh workdir, capped output, every leftover process killed.

It falls back to a cold `sandbox.run` (and says `warm=False`) whenever a warm run could differ
from a cold one:
- the spec sets environment variables that torch reads at import time (TORCH_LOGS,
  TORCHINDUCTOR_*, TORCHDYNAMO_*, ...): the server imported torch before seeing them;
  only `WARM_SAFE_ENV` is applied after import;
- the spec runs a command (`argv`) or another interpreter than the worker's;
- CUDA: a process that initialised CUDA cannot fork safely, so GPU runs are always cold
  (`cuda=True`), and the server itself never touches CUDA;
- the server died and could not be restarted.
"""
from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import sandbox
from .sandbox import RunResult, RunSpec, build_env, namespace_support

log = logging.getLogger(__name__)

SERVER = Path(__file__).with_name("_worker_server.py")
WARM_SAFE_ENV = frozenset({"PYTHONFAULTHANDLER", "PYTHONUNBUFFERED", "OMP_NUM_THREADS"})
START_TIMEOUT_S = 180


class WorkerUnavailable(RuntimeError):
    pass


class WarmWorker:
    def __init__(self, preload: tuple[str, ...] = ("torch",), python: str = sys.executable, isolate_network: bool = True):
        self.preload = preload
        self.python = python
        self.isolate_network = isolate_network
        self.proc: subprocess.Popen | None = None
        self.home: Path | None = None
        self.lock = threading.Lock()
        self.restarts = 0
        self._buffer = b""

    # --- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> "WarmWorker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="pt2-worker-"))
        isolated, _ = namespace_support() if self.isolate_network else (False, "")
        prefix = [shutil.which("unshare"), "--net", "--"] if isolated else []
        env = build_env({}, self.home)
        self.proc = subprocess.Popen(prefix + [self.python, str(SERVER), *self.preload], cwd=self.home, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.network_isolated = isolated
        ready = self._read_event(time.monotonic() + START_TIMEOUT_S)
        if ready is None or ready.get("event") != "ready":
            self.close()
            raise WorkerUnavailable("the warm worker did not start")

    def close(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    # --- runs --------------------------------------------------------------------------------------
    def can_run_warm(self, spec: RunSpec, cuda: bool = False) -> bool:
        return (not cuda and spec.argv is None and spec.script is not None and spec.python == self.python
                and set(spec.env) <= WARM_SAFE_ENV and spec.isolate_network == self.isolate_network)

    def run(self, spec: RunSpec, cuda: bool = False) -> RunResult:
        """Run warm when that gives the same result as cold; otherwise run cold."""
        if not self.can_run_warm(spec, cuda):
            return sandbox.run(spec)
        with self.lock:
            for attempt in range(2):
                if self.proc is None or self.proc.poll() is not None:
                    if attempt or self.restarts >= 1:
                        break
                    self.restarts += 1
                    log.warning("warm worker died; restarting it once")
                    self.close()
                    try:
                        self.start()
                    except WorkerUnavailable:
                        break
                try:
                    return self._run_warm(spec)
                except WorkerUnavailable:
                    continue
        return sandbox.run(spec)

    def _run_warm(self, spec: RunSpec) -> RunResult:
        workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="pt2-sandbox-"))
        (workdir / "tmp").mkdir(parents=True, exist_ok=True)
        env = build_env(spec.env, workdir)
        (workdir / "repro.py").write_text(spec.script, encoding="utf-8")
        for name, content in spec.files.items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / name).write_text(content, encoding="utf-8")
        flood = max(spec.output_cap_bytes * sandbox.OUTPUT_KILL_FACTOR, sandbox.OUTPUT_KILL_MIN_BYTES)
        request = {"workdir": str(workdir), "script": "repro.py", "env": env, "cpu_s": spec.cpu_time_s or 0,
                   "as_bytes": spec.address_space_bytes or 0, "fsize_bytes": flood}
        started = time.monotonic()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            return self._await(spec, workdir, env, started)
        except (BrokenPipeError, OSError) as exc:
            raise WorkerUnavailable(str(exc)) from None
        finally:
            if spec.workdir is None and not spec.keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

    def _await(self, spec: RunSpec, workdir: Path, env: dict, started: float) -> RunResult:
        deadline = started + spec.timeout_s
        begun = self._read_event(started + 30)
        if begun is None or begun.get("event") != "started":
            raise WorkerUnavailable("no start event from the warm worker")
        limits: list[str] = []
        done = self._read_event(deadline)
        if done is None:
            limits.append("timeout")
            _signal(begun["pid"], signal.SIGTERM, group=False)
            done = self._read_event(time.monotonic() + 3)
            if done is None:
                _signal(begun["pid"], signal.SIGKILL, group=True)
                raise WorkerUnavailable("a timed-out run did not clean up")
        status = done["wait_status"]
        stdout, out_dropped = _read_capped(workdir / ".pt2_stdout", spec.output_cap_bytes)
        stderr, err_dropped = _read_capped(workdir / ".pt2_stderr", spec.output_cap_bytes)
        exit_code, sig = (None, sandbox._signal_name(os.WTERMSIG(status))) if os.WIFSIGNALED(status) else (os.WEXITSTATUS(status), None)
        if sig == "SIGXFSZ":
            limits.append("output")
        limits.extend(sandbox._limits_from_outcome(spec, sig, stderr, limits))
        if "timeout" in limits and sig in ("SIGKILL", "SIGTERM"):
            sig = None
        return RunResult(
            exit_code=exit_code, signal=sig, duration_s=round(time.monotonic() - started, 3),
            peak_rss_bytes=done["maxrss_kb"] * 1024, stdout=stdout, stderr=stderr,
            stdout_dropped_bytes=out_dropped, stderr_dropped_bytes=err_dropped,
            limits_fired=tuple(dict.fromkeys(limits)), network_isolated=self.network_isolated,
            network_note=sandbox.namespace_support()[1] if self.network_isolated else "the warm worker was not isolated",
            workdir=str(workdir) if spec.keep_workdir or spec.workdir else None, env_used=dict(env), warm=True)

    def _read_event(self, deadline: float) -> dict | None:
        """The next JSON line from the server, or None at the deadline / if the server is gone."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise WorkerUnavailable("the warm worker exited")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _read_capped(path: Path, cap: int) -> tuple[str, int]:
    """Head (a quarter of the cap) and tail (the rest) of an output file, like the cold sandbox."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "", 0
    with path.open("rb") as handle:
        if size <= cap:
            return handle.read().decode("utf-8", errors="replace"), 0
        head = handle.read(cap // 4)
        handle.seek(size - (cap - cap // 4))
        tail = handle.read()
    dropped = size - len(head) - len(tail)
    return (head + f"\n[... {dropped} bytes dropped ...]\n".encode() + tail).decode("utf-8", errors="replace"), dropped


__all__ = ["WarmWorker", "WorkerUnavailable", "WARM_SAFE_ENV"]
