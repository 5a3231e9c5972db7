"""The records a run is described by (`RunSpec`) and reported in (`RunResult`), and the fixed paths
it sees inside the sandbox.

They live apart from `sandbox.py` so that every piece of the sandbox (environment, bubblewrap
command, workdir, output readers) can use them without importing the code that starts processes;
this module imports nothing of ours. Callers import them from `runners.sandbox`, as before.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Mapping

GiB = 1 << 30
MiB = 1 << 20

# Inside the sandbox: fixed paths, so nothing of the host's layout shows in outputs.
SANDBOX_UID = SANDBOX_GID = 65534
INSIDE_WORKDIR = "/sandbox"
INSIDE_CACHE = "/cache"
INSIDE_RUNNER = "/.pt2"
INSIDE_HOME = "/tmp/home"
INDUCTOR_CACHE = "inductor_cache"  # TORCHINDUCTOR_CACHE_DIR, in a run's workdir or its job's cache dir
JOB_INDUCTOR_TMP = "inductor_tmp"  # in a job's cache dir: what Inductor keeps in its default dir (precompiled headers)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here (no bubblewrap, or it fails to start); the message ends with the fix."""


@dataclass(frozen=True)
class RunSpec:
    """What to run and under which limits. Exactly one of `argv` and `script`."""
    argv: tuple[str, ...] | None = None
    script: str | None = None  # written to repro.py in the workdir and run like `python repro.py`
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)  # extra variables, e.g. TORCH_LOGS
    timeout_s: float = 300
    cpu_time_s: int | None = 600
    # 32, not 16 GiB: CUDA reserves virtual address space at init; measured on an H100 host
    # (torch 2.11+cu130), torch.ones(3, device="cuda") fails under 16 GiB and works under 32 GiB.
    address_space_bytes: int | None = 32 * GiB
    output_cap_bytes: int = 4 * MiB  # per stream
    files: Mapping[str, str] = field(default_factory=dict)  # extra files, relative to the workdir
    isolate_network: bool = True  # False shares the host's network namespace (trusted tools only)
    keep_workdir: bool = False
    workdir: str | None = None  # run here instead of a fresh temp dir (never removed; chowned to the sandbox uid as root)
    cache_dir: str | None = None  # the job's Inductor/Triton caches, shared by its runs (else per run, in the workdir)
    cwd: str | None = None  # where to start, relative to the workdir (default: the workdir)
    gpu: bool = False  # show the NVIDIA devices (/dev/nvidia*) to the run
    # Tasks (processes and threads) of the run; torch starts a thread per core and Inductor a pool of
    # compile workers, so this is generous: it stops fork bombs, not torch.
    max_processes: int | None = 4096
    max_file_bytes: int | None = 8 * GiB  # any one file the run writes (RLIMIT_FSIZE)
    max_disk_bytes: int | None = 16 * GiB  # all it adds to the host's disk (workdir, job cache): runners/disk_watch.py
    max_disk_files: int | None = 1_000_000  # files (inodes) it adds there: empty files take no bytes, but inodes run out
    memory_bytes: int | None = 64 * GiB  # the whole run's memory, only where a cgroup v2 enforces it
    tmp_bytes: int = 2 * GiB  # size of the run's private /tmp and of its /dev/shm (both tmpfs, in RAM)
    unsafe_no_sandbox: bool = False  # without bubblewrap: run anyway with weaker isolation (RunResult.sandbox says so)
    extra_ro_paths: tuple[str, ...] = ()  # trusted host paths (a tool's binary) to show read-only, at the same path


@dataclass(frozen=True)
class RunResult:
    """How a run ended; JSON-safe so a runner job can hand it to the trusted side.

    `exit_code`/`signal` are what the launcher observed of the script's process (not anything the
    script printed). `uncaught_exception` is the bootstrap's report of the exception that ended the
    script ({"type": "module.Name", "message", "frames": [[file, line, function]...], "cause",
    "context", "suppress_context"}), kept only when the run did not exit 0: a script that targets the
    channel can claim an exception it never raised, but cannot make a clean exit look failed."""
    exit_code: int | None
    signal: str | None  # "SIGSEGV" etc. when the script died of a signal we did not send
    duration_s: float
    peak_rss_bytes: int | None
    stdout: str
    stderr: str
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    limits_fired: tuple[str, ...] = ()  # timeout, cpu_time, address_space, file_size, processes, memory, output, disk
    network_isolated: bool = False
    network_note: str = ""
    workdir: str | None = None
    env_used: dict = field(default_factory=dict)
    warm: bool = False  # run by the warm worker (runners/worker.py) rather than a fresh interpreter
    uncaught_exception: dict | None = None
    probe: dict | None = None  # the in-run torch probe's measurements (runners/_torch_probe.py), when asked
    sandbox: str = ""  # e.g. "bubblewrap 0.8.0, uid 65534, seccomp" or "none (unsafe): ..."
    limits_mechanism: str = ""  # "rlimit" (per process) or "cgroup v2" (whole run) + rlimits
    cleanup_error: str = ""  # why the workdir could not be removed, if it could not

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
