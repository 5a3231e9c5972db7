"""The only place that starts processes: run an untrusted script with limits and no secrets.

Every run gets
- a fresh working directory (removed afterwards unless asked to keep it),
- an environment built from scratch: PATH, HOME, locale, caches inside the workdir, a short
  allow list of hardware variables, and the caller's diagnostics; a name that looks like a
  credential is refused outright, so a token cannot reach a repro even by mistake,
- rlimits on CPU time, address space and core dumps,
- new PID and network namespaces (`unshare --pid --net --fork --kill-child`) when the machine
  allows it: no network, not even loopback, and every process the script starts dies with it;
  without namespaces the run goes ahead and `network_isolated` says it was not isolated,
- a wall-clock timeout that kills the whole process group,
- output capped while it is read (head and tail kept, the middle counted and dropped).
"""
from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

log = logging.getLogger(__name__)

GiB = 1 << 30
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
                "CC", "CXX", "OMP_NUM_THREADS", "TZ", "CUDA_HOME", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
SECRET_PATTERNS = ("*TOKEN*", "*SECRET*", "*_KEY", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "GITHUB_*",
                   "ACTIONS_*", "RUNNER_*", "AWS_*", "PT2_TRIAGE_*", "SSH_AUTH_SOCK")
OUTPUT_KILL_FACTOR = 64  # a stream past max(cap * this, OUTPUT_KILL_MIN_BYTES) gets the run killed
OUTPUT_KILL_MIN_BYTES = 64 << 20
TERM_GRACE_S = 2.0
LAUNCHER = Path(__file__).with_name("_launcher.py")


@dataclass(frozen=True)
class RunSpec:
    argv: tuple[str, ...] | None = None
    script: str | None = None  # written to repro.py in the workdir and run with `python`
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 300
    cpu_time_s: int | None = 1200
    address_space_bytes: int | None = 32 * GiB
    output_cap_bytes: int = 4 << 20  # per stream
    files: Mapping[str, str] = field(default_factory=dict)
    isolate_network: bool = True
    keep_workdir: bool = False
    workdir: str | None = None  # run here instead of a fresh temp dir (never removed)


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None
    signal: str | None
    duration_s: float
    peak_rss_bytes: int | None
    stdout: str
    stderr: str
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    limits_fired: tuple[str, ...] = ()
    network_isolated: bool = False
    network_note: str = ""
    workdir: str | None = None
    env_used: dict = field(default_factory=dict)
    warm: bool = False

    @property
    def status(self) -> str:
        """ok | failed | crashed | timeout | limit"""
        if "timeout" in self.limits_fired:
            return "timeout"
        if self.limits_fired:
            return "limit"
        if self.signal:
            return "crashed"
        return "ok" if self.exit_code == 0 else "failed"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> "RunResult":
        known = cls.__dataclass_fields__
        values = {k: v for k, v in data.items() if k in known}
        values["limits_fired"] = tuple(values.get("limits_fired", ()))
        return cls(**values)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def build_env(extra: Mapping[str, str], workdir: Path, parent: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The child's whole environment. Raises ValueError if `extra` names a credential (a caller bug)."""
    refused = sorted(name for name in extra if is_secret_name(name))
    if refused:
        raise ValueError(f"refusing to pass secret-looking variables into the sandbox: {', '.join(refused)}")
    env = {
        "PATH": SAFE_PATH,
        "HOME": str(workdir),
        "TMPDIR": str(workdir / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor_cache"),
        "TRITON_CACHE_DIR": str(workdir / "triton_cache"),
    }
    env.update({name: parent[name] for name in PASS_THROUGH if name in parent and not is_secret_name(name)})
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


@lru_cache(maxsize=1)
def namespace_support() -> tuple[bool, str]:
    """Whether `unshare --pid --net` works here (root or user namespaces); probed once."""
    binary = shutil.which("unshare")
    if binary is None:
        return False, "unshare(1) is not installed; the network was not isolated"
    try:
        probe = subprocess.run([binary, "--net", "--pid", "--fork", "--kill-child", "--", "true"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"unshare failed ({exc}); the network was not isolated"
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["unknown error"]
        return False, f"new namespaces are not permitted here ({reason[0]}); the network was not isolated"
    return True, "new network and PID namespaces: no network, not even loopback"


class _CappedReader(threading.Thread):
    """Drains one pipe, keeping the first quarter of `cap` bytes and a ring of the last three quarters."""

    def __init__(self, stream, cap: int, on_flood):
        super().__init__(daemon=True)
        self.stream, self.head_cap, self.tail_cap = stream, cap // 4, cap - cap // 4
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.on_flood, self.flood_at = on_flood, max(cap * OUTPUT_KILL_FACTOR, OUTPUT_KILL_MIN_BYTES)

    def run(self) -> None:
        while chunk := self.stream.read1(1 << 16) if hasattr(self.stream, "read1") else self.stream.read(1 << 16):
            self.total += len(chunk)
            room = self.head_cap - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > 2 * self.tail_cap:
                    del self.tail[:len(self.tail) - self.tail_cap]
            if self.total > self.flood_at:
                self.on_flood()
        self.stream.close()

    def text(self) -> tuple[str, int]:
        tail = self.tail[-self.tail_cap:] if len(self.tail) > self.tail_cap else self.tail
        dropped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
        return (bytes(self.head) + marker + bytes(tail)).decode("utf-8", errors="replace"), dropped


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(spec: RunSpec) -> RunResult:
    """Run `spec` to completion (or its limits) and report what happened."""
    if (spec.argv is None) == (spec.script is None):
        raise ValueError("give exactly one of argv or script")
    own_dir = spec.workdir is None
    workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="pt2-sandbox-"))
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    env = build_env(spec.env, workdir)
    if spec.script is not None:
        (workdir / "repro.py").write_text(spec.script, encoding="utf-8")
    for name, content in spec.files.items():
        target = (workdir / name).resolve()
        if workdir.resolve() not in target.parents:
            raise ValueError(f"file {name!r} would be written outside the workdir")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    target = list(spec.argv) if spec.argv else [spec.python, "repro.py"]
    isolated, note = namespace_support() if spec.isolate_network else (False, "isolation not requested")
    try:
        return _execute(spec, target, env, workdir, isolated, note)
    finally:
        if own_dir and not spec.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def _launch_argv(spec: RunSpec, target: list[str], status_fd: int, isolated: bool) -> list[str]:
    """unshare (if available) -> our launcher (PID 1, applies rlimits, reaps everything) -> target."""
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(status_fd), str(spec.cpu_time_s or 0),
                str(spec.address_space_bytes or 0), "--"]
    prefix = [shutil.which("unshare"), "--net", "--pid", "--fork", "--kill-child", "--"] if isolated else []
    return prefix + launcher + target


def _read_status(read_fd: int) -> dict | None:
    chunks = []
    while chunk := os.read(read_fd, 4096):
        chunks.append(chunk)
    os.close(read_fd)
    try:
        return json.loads(b"".join(chunks)) if chunks else None
    except ValueError:
        return None


def _execute(spec: RunSpec, target: list[str], env: dict, workdir: Path, isolated: bool, note: str) -> RunResult:
    limits: list[str] = []
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(_launch_argv(spec, target, write_fd, isolated), cwd=workdir, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, pass_fds=(write_fd,))
    finally:
        os.close(write_fd)

    def flood() -> None:
        if "output" not in limits:
            limits.append("output")
        _kill_group(proc.pid)

    readers = [_CappedReader(proc.stdout, spec.output_cap_bytes, flood), _CappedReader(proc.stderr, spec.output_cap_bytes, flood)]
    for reader in readers:
        reader.start()
    status, usage = _wait(proc, spec.timeout_s, limits)
    _kill_group(proc.pid)  # anything the script left behind in its group
    reported = _read_status(read_fd)
    if reported is not None:  # the target's own ending, not the launcher's
        status, peak_rss = reported["wait_status"], reported["maxrss_kb"] * 1024
    else:
        peak_rss = usage.ru_maxrss * 1024 if usage else None
    for reader in readers:
        reader.join(timeout=10)
    duration = time.monotonic() - started
    (stdout, out_dropped), (stderr, err_dropped) = readers[0].text(), readers[1].text()
    exit_code, sig = None, None
    if os.WIFSIGNALED(status):
        sig = _signal_name(os.WTERMSIG(status))
    else:
        exit_code = os.WEXITSTATUS(status)
    limits.extend(_limits_from_outcome(spec, sig, stderr, limits))
    return RunResult(
        exit_code=exit_code, signal=None if "timeout" in limits and sig == "SIGKILL" else sig,
        duration_s=round(duration, 3), peak_rss_bytes=peak_rss,
        stdout=stdout, stderr=stderr, stdout_dropped_bytes=out_dropped, stderr_dropped_bytes=err_dropped,
        limits_fired=tuple(dict.fromkeys(limits)), network_isolated=isolated, network_note=note,
        workdir=str(workdir) if spec.keep_workdir or spec.workdir else None, env_used=dict(env))


def _wait(proc: subprocess.Popen, timeout_s: float, limits: list[str]):
    """wait4 with a deadline: on timeout SIGTERM the group, then SIGKILL after a grace period."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = 0  # reaped here; keep Popen from waiting again
            return status, usage
        if time.monotonic() > deadline:
            limits.append("timeout")
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            time.sleep(min(TERM_GRACE_S, 0.2))
            _kill_group(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = 0
            return status, usage
        time.sleep(0.01 if time.monotonic() - deadline + timeout_s < 1 else 0.05)


def _limits_from_outcome(spec: RunSpec, sig: str | None, stderr: str, already: list[str]) -> list[str]:
    """Which rlimit stopped the run, read from how it ended."""
    found = []
    if sig == "SIGXCPU" and spec.cpu_time_s:
        found.append("cpu_time")
    if spec.address_space_bytes and "timeout" not in already and (
            "MemoryError" in stderr[-4000:] or "std::bad_alloc" in stderr[-4000:]
            or "Cannot allocate memory" in stderr[-4000:] or "DefaultCPUAllocator: can't allocate memory" in stderr[-4000:]):
        found.append("address_space")
    return found
