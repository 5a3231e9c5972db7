"""The only place that starts processes: run an untrusted script with limits and no secrets.

Every run gets
- a fresh working directory (removed afterwards unless asked to keep it, or the caller gave one),
- an environment built from scratch: PATH, HOME, locale, caches inside the workdir, a short
  allow list of hardware variables, and the caller's diagnostics; a name that looks like a
  credential is refused outright, so a token cannot reach a repro even by mistake,
- rlimits on CPU time, address space and core dumps (applied by `_launcher.py`),
- new PID, mount and network namespaces (`unshare --net --pid --fork --kill-child --mount-proc`)
  when the machine allows it: no network, not even loopback, no view of the host's processes
  (nor of their /proc/PID/environ), and every process the script starts dies with it; without
  namespaces the run goes ahead and `network_isolated`/`network_note` say why it was not isolated,
- a wall-clock timeout: SIGTERM to the process group, a short grace, then SIGKILL,
- a launcher that is PID 1 (or a child subreaper) and kills whatever the script left behind,
  daemons that escaped the process group with setsid included,
- output capped while it is read (the first quarter and the last three quarters of the cap kept,
  the middle counted and dropped), so a script printing a gigabyte costs us at most ~2x the cap.
"""
from __future__ import annotations

import fnmatch
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
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

log = logging.getLogger(__name__)

GiB = 1 << 30
MiB = 1 << 20
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Hardware and toolchain variables a repro may need; never caches (those go in the workdir).
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
                "CC", "CXX", "OMP_NUM_THREADS", "TZ", "CUDA_HOME", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
SECRET_PATTERNS = ("*TOKEN*", "*SECRET*", "*_KEY", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "GITHUB_*",
                   "ACTIONS_*", "RUNNER_*", "AWS_*", "PT2_TRIAGE_*", "SSH_AUTH_SOCK")
OUTPUT_KILL_FACTOR = 64  # a stream past max(cap * this, OUTPUT_KILL_MIN_BYTES) gets the run killed
OUTPUT_KILL_MIN_BYTES = 64 * MiB
TERM_GRACE_S = 1.0  # between SIGTERM and SIGKILL on timeout: time for the launcher to clean up
LAUNCHER = Path(__file__).with_name("_launcher.py")
# New network and PID namespaces; the PID namespace needs its own /proc (--mount-proc), without
# which CUDA cannot initialise (cudaGetDeviceCount fails with error 304 on an H100 host).
UNSHARE_FLAGS = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")
OUR_KILLS = ("SIGKILL", "SIGTERM")  # how a run we stopped (timeout, output flood) ends


@dataclass(frozen=True)
class RunSpec:
    """What to run and under which limits. Exactly one of `argv` and `script`."""
    argv: tuple[str, ...] | None = None
    script: str | None = None  # written to repro.py in the workdir and run with `python repro.py`
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)  # extra variables, e.g. TORCH_LOGS
    timeout_s: float = 300
    cpu_time_s: int | None = 600
    # 32, not 16 GiB: CUDA reserves virtual address space at init; measured on an H100 host
    # (torch 2.11+cu130), torch.ones(3, device="cuda") fails under 16 GiB and works under 32 GiB.
    address_space_bytes: int | None = 32 * GiB
    output_cap_bytes: int = 4 * MiB  # per stream
    files: Mapping[str, str] = field(default_factory=dict)  # extra files, relative to the workdir
    isolate_network: bool = True
    keep_workdir: bool = False
    workdir: str | None = None  # run here instead of a fresh temp dir (never removed)
    cache_dir: str | None = None  # share Inductor/Triton caches between runs of one job (else per run)


@dataclass(frozen=True)
class RunResult:
    """How a run ended; JSON-safe so a runner job can hand it to the trusted side."""
    exit_code: int | None
    signal: str | None  # "SIGSEGV" etc. when the script died of a signal we did not send
    duration_s: float
    peak_rss_bytes: int | None
    stdout: str
    stderr: str
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    limits_fired: tuple[str, ...] = ()  # "timeout", "cpu_time", "address_space", "output"
    network_isolated: bool = False
    network_note: str = ""
    workdir: str | None = None
    env_used: dict = field(default_factory=dict)
    warm: bool = False  # run by the warm worker (runners/worker.py) rather than a fresh interpreter

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
        data["limits_fired"] = list(self.limits_fired)
        data["status"] = self.status
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> "RunResult":
        known = cls.__dataclass_fields__
        values = {k: v for k, v in data.items() if k in known}
        values["limits_fired"] = tuple(values.get("limits_fired", ()))
        return cls(**values)


# --- environment -------------------------------------------------------------------------------
def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def build_env(extra: Mapping[str, str], workdir: Path, parent: Mapping[str, str] = os.environ,
              cache_dir: str | None = None) -> dict[str, str]:
    """The child's whole environment. Raises ValueError if `extra` names a credential (a caller bug)."""
    refused = sorted(name for name in extra if is_secret_name(name))
    if refused:
        raise ValueError(f"refusing to pass secret-looking variables into the sandbox: {', '.join(refused)}")
    workdir = Path(workdir)
    env = {
        "PATH": SAFE_PATH,
        "HOME": str(workdir),
        "TMPDIR": str(workdir / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(Path(cache_dir or workdir) / "inductor_cache"),
        "TRITON_CACHE_DIR": str(Path(cache_dir or workdir) / "triton_cache"),
    }
    env.update({name: parent[name] for name in PASS_THROUGH if name in parent and not is_secret_name(name)})
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


@lru_cache(maxsize=1)
def namespace_support() -> tuple[bool, str]:
    """Whether `unshare` can give us new network+PID namespaces here (root or user namespaces); probed once."""
    binary = shutil.which("unshare")
    if binary is None:
        return False, "unshare(1) is not installed; the network was not isolated"
    try:
        probe = subprocess.run([binary, *UNSHARE_FLAGS, "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"unshare failed ({exc}); the network was not isolated"
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["unknown error"]
        return False, f"new namespaces are not permitted here ({reason[0]}); the network was not isolated"
    return True, "new network and PID namespaces: no network, not even loopback"


def isolation_for(requested: bool) -> tuple[bool, str]:
    return namespace_support() if requested else (False, "isolation not requested")


def unshare_prefix(isolated: bool) -> list[str]:
    return [shutil.which("unshare") or "unshare", *UNSHARE_FLAGS, "--"] if isolated else []


# --- workdir -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """A workdir ready for one run: the script and files written, the environment built."""
    workdir: Path
    env: dict
    owned: bool  # we created it, so we remove it (unless keep_workdir)

    def cleanup(self, spec: RunSpec) -> None:
        if self.owned and not spec.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def reported_workdir(self, spec: RunSpec) -> str | None:
        return str(self.workdir) if spec.keep_workdir or not self.owned else None


def prepare(spec: RunSpec) -> Prepared:
    """Validate the spec (before touching the disk), then make and fill the workdir."""
    if (spec.argv is None) == (spec.script is None):
        raise ValueError("give exactly one of argv or script")
    build_env(spec.env, Path("/nonexistent"))  # refuses secrets before anything is created
    owned = spec.workdir is None
    workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="pt2-sandbox-")).resolve()
    try:
        (workdir / "tmp").mkdir(parents=True, exist_ok=True)
        if spec.script is not None:
            (workdir / "repro.py").write_text(spec.script, encoding="utf-8")
        for name, content in spec.files.items():
            target = (workdir / name).resolve()
            if workdir not in target.parents:
                raise ValueError(f"file {name!r} would be written outside the workdir")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
    except BaseException:
        if owned:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    return Prepared(workdir, build_env(spec.env, workdir, cache_dir=spec.cache_dir), owned)


# --- output ------------------------------------------------------------------------------------
class CappedReader(threading.Thread):
    """Drains one pipe, keeping the first quarter of `cap` bytes and a ring of the last three quarters.

    Memory stays under ~2x the cap however much the child writes; past the flood mark
    (64x the cap, at least 64 MiB) `on_flood` is called once so the caller can kill the run.
    """

    def __init__(self, fd: int, cap: int, on_flood: Callable[[], None]):
        super().__init__(daemon=True)
        self.fd, self.head_cap, self.tail_cap = fd, cap // 4, cap - cap // 4
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.on_flood, self.flood_at, self.flooded = on_flood, max(cap * OUTPUT_KILL_FACTOR, OUTPUT_KILL_MIN_BYTES), False

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self._keep(chunk)
        finally:
            os.close(self.fd)

    def _keep(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[:len(self.tail) - self.tail_cap]
        if self.total > self.flood_at and not self.flooded:
            self.flooded = True
            self.on_flood()

    def text(self) -> tuple[str, int]:
        """The kept output (with a marker line where bytes were dropped) and how many were dropped."""
        tail = self.tail[-self.tail_cap:] if len(self.tail) > self.tail_cap else self.tail
        dropped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
        return (bytes(self.head) + marker + bytes(tail)).decode("utf-8", errors="replace"), dropped


def start_readers(fds: tuple[int, int], cap: int, on_flood: Callable[[], None]) -> tuple[CappedReader, CappedReader]:
    readers = (CappedReader(fds[0], cap, on_flood), CappedReader(fds[1], cap, on_flood))
    for reader in readers:
        reader.start()
    return readers


# --- outcome -----------------------------------------------------------------------------------
def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decode_wait_status(status: int) -> tuple[int | None, str | None]:
    """(exit code, None) or (None, signal name)."""
    if os.WIFSIGNALED(status):
        return None, signal_name(os.WTERMSIG(status))
    return os.WEXITSTATUS(status), None


MEMORY_ERROR_MARKS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory",
                      "DefaultCPUAllocator: can't allocate memory", "failed to map segment")


def limits_from_outcome(spec: RunSpec, exit_code: int | None, sig: str | None, stderr: str,
                        already: list[str]) -> list[str]:
    """Which rlimit stopped the run, read from how it ended: SIGXCPU means the CPU limit; a failed
    run whose stderr ends in an allocation failure, with an address-space limit set, means that one."""
    found = []
    if sig == "SIGXCPU" and spec.cpu_time_s:
        found.append("cpu_time")
    failed = sig is not None or exit_code != 0
    tail = stderr[-4000:]
    if (spec.address_space_bytes and failed and "timeout" not in already
            and any(mark in tail for mark in MEMORY_ERROR_MARKS)):
        found.append("address_space")
    return found


def build_result(spec: RunSpec, prepared: Prepared, wait_status: int | None, peak_rss: int | None,
                 readers: tuple[CappedReader, CappedReader], limits: list[str], duration_s: float,
                 network: tuple[bool, str], warm: bool) -> RunResult:
    """One RunResult for cold and warm runs alike. A run we stopped reports no signal of its own."""
    (stdout, out_dropped), (stderr, err_dropped) = readers[0].text(), readers[1].text()
    exit_code, sig = decode_wait_status(wait_status) if wait_status is not None else (None, None)
    limits = limits + limits_from_outcome(spec, exit_code, sig, stderr, limits)
    if sig in OUR_KILLS and ("timeout" in limits or "output" in limits):
        sig = None
    return RunResult(
        exit_code=exit_code, signal=sig, duration_s=round(duration_s, 3), peak_rss_bytes=peak_rss,
        stdout=stdout, stderr=stderr, stdout_dropped_bytes=out_dropped, stderr_dropped_bytes=err_dropped,
        limits_fired=tuple(dict.fromkeys(limits)), network_isolated=network[0], network_note=network[1],
        workdir=prepared.reported_workdir(spec), env_used=dict(prepared.env), warm=warm)


# --- processes ---------------------------------------------------------------------------------
def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_with_deadline(pid: int, deadline: float):
    """wait4(pid) until `deadline` (monotonic); (status, rusage) or None if still running.
    Sleeps on a pidfd where the kernel has them, so an exit is seen at once."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            reaped, status, usage = os.wait4(pid, os.WNOHANG)
            if reaped:
                return status, usage
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], remaining)
            else:
                time.sleep(min(remaining, 0.01))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def run(spec: RunSpec) -> RunResult:
    """Run `spec` to completion (or its limits) in a fresh interpreter and report what happened."""
    prepared = prepare(spec)
    target = list(spec.argv) if spec.argv else [spec.python, "repro.py"]
    try:
        return _execute(spec, prepared, target, isolation_for(spec.isolate_network))
    finally:
        prepared.cleanup(spec)


def _launch_argv(spec: RunSpec, target: list[str], status_fd: int, isolated: bool) -> list[str]:
    """unshare (if available) -> our launcher (PID 1, applies rlimits, reaps everything) -> target."""
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(status_fd), str(spec.cpu_time_s or 0),
                str(spec.address_space_bytes or 0), "--"]
    return unshare_prefix(isolated) + launcher + target


def _read_status(read_fd: int) -> dict | None:
    """The launcher's report on the target (wait status, peak RSS), or None if it was killed first."""
    chunks = []
    while chunk := os.read(read_fd, 4096):
        chunks.append(chunk)
    os.close(read_fd)
    try:
        return json.loads(b"".join(chunks)) if chunks else None
    except ValueError:
        return None


def _execute(spec: RunSpec, prepared: Prepared, target: list[str], network: tuple[bool, str]) -> RunResult:
    limits: list[str] = []
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(_launch_argv(spec, target, write_fd, network[0]), cwd=prepared.workdir,
                                env=prepared.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, pass_fds=(write_fd,))
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)

    def flood() -> None:
        limits.append("output")
        signal_group(proc.pid, signal.SIGKILL)

    readers = start_readers((os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())), spec.output_cap_bytes, flood)
    proc.stdout.close()
    proc.stderr.close()
    status, usage = _wait(proc, spec.timeout_s, limits)
    signal_group(proc.pid, signal.SIGKILL)  # anything the script left behind in its group
    reported = _read_status(read_fd)
    if reported is not None:  # the target's own ending, not the launcher's
        status, peak_rss = reported["wait_status"], reported["maxrss_kb"] * 1024
    else:
        peak_rss = usage.ru_maxrss * 1024 if usage else None
    for reader in readers:
        reader.join(timeout=10)
    return build_result(spec, prepared, status, peak_rss, readers, limits, time.monotonic() - started,
                        network, warm=False)


def _wait(proc: subprocess.Popen, timeout_s: float, limits: list[str]):
    """Reap the launcher; on timeout SIGTERM the group (the launcher then kills and reaps the
    target and reports), and SIGKILL it if that takes longer than the grace period."""
    done = wait_with_deadline(proc.pid, time.monotonic() + timeout_s)
    if done is None:
        limits.append("timeout")
        signal_group(proc.pid, signal.SIGTERM)
        done = wait_with_deadline(proc.pid, time.monotonic() + TERM_GRACE_S)
        if done is None:
            signal_group(proc.pid, signal.SIGKILL)
            done = os.wait4(proc.pid, 0)[1:]
    proc.returncode = -1  # reaped here; keep Popen from waiting again
    return done
