"""Limits over a whole run (memory and tasks of all its processes together), where cgroup v2 allows.

rlimits are per process: RLIMIT_AS caps each process's address space, so 500 processes of 1 GiB
each are within it. A cgroup caps their sum. We use one only when a delegated cgroup v2 is there
for us, never by reconfiguring the host:
- the cgroup named by the PT2_SANDBOX_CGROUP environment variable (a path under the cgroup2 mount,
  e.g. /sys/fs/cgroup/pt2-runs, made by the machine's owner with `memory` (and `pids`, if it is
  to cap tasks too) in its cgroup.subtree_control and writable by us), or
- our own cgroup, when its cgroup.subtree_control already enables `memory` (systemd's
  Delegate=yes on a unit whose processes live in a leaf below it).
Each run then gets a child cgroup with memory.max, memory.swap.max=0 and pids.max; the sandbox
starts inside it (`_stage.py` moves itself there before exec'ing bubblewrap) and the cgroup is
removed afterwards. Otherwise (a cgroup v1 or hybrid host, no delegation) `available()` says why
and runs rely on rlimits alone (RunResult.limits_mechanism says which applied).
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

ENV_PARENT = "PT2_SANDBOX_CGROUP"
NEEDED = ("memory",)  # pids.max is used where the pids controller is enabled too (RLIMIT_NPROC applies anyway)


def cgroup2_mount() -> str | None:
    """Where the unified (v2) hierarchy is mounted, if it is."""
    try:
        with open("/proc/self/mountinfo") as mounts:
            for line in mounts:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        pass
    return None


def _own_cgroup(mount: str) -> Path | None:
    try:
        with open("/proc/self/cgroup") as membership:
            for line in membership:
                if line.startswith("0::"):
                    return Path(mount) / line[3:].strip().lstrip("/")
    except OSError:
        pass
    return None


def _usable(parent: Path) -> str:
    """'' if runs can get child cgroups of `parent` with memory and pids limits, else why not."""
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError as exc:
        return f"{parent}: {exc.strerror}"
    missing = [name for name in NEEDED if name not in enabled]
    if missing:
        return f"{parent}: {', '.join(missing)} not enabled in cgroup.subtree_control"
    probe = parent / f"pt2-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"{parent}: cannot create a child cgroup ({exc.strerror})"
    try:
        for name in ("memory.max", "cgroup.procs"):
            if not os.access(probe / name, os.W_OK):
                return f"{probe / name} is not writable"
        return ""
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


@lru_cache(maxsize=1)
def available() -> tuple[Path | None, str]:
    """(the delegated parent cgroup, note) or (None, why rlimits alone apply). Probed once."""
    mount = cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 mounted: rlimits only (per process)"
    explicit = os.environ.get(ENV_PARENT)
    candidates = [Path(explicit)] if explicit else [c for c in (_own_cgroup(mount),) if c is not None]
    reasons = []
    for candidate in candidates:
        problem = _usable(candidate)
        if not problem:
            return candidate, f"cgroup v2 at {candidate}"
        reasons.append(problem)
    return None, "no delegated cgroup v2 (" + ("; ".join(reasons) or f"set {ENV_PARENT}") + "): rlimits only (per process)"


class RunCgroup:
    """One run's cgroup: made with its limits before the run, read and removed after it."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, spec) -> "RunCgroup | None":
        parent, _ = available()
        if parent is None:
            return None
        path = parent / f"pt2-run-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            cgroup = cls(path)
            cgroup._write("memory.max", str(spec.memory_bytes) if spec.memory_bytes else "max")
            cgroup._write("memory.swap.max", "0", optional=True)
            cgroup._write("pids.max", str(spec.max_processes) if spec.max_processes else "max", optional=True)
            return cgroup
        except OSError as exc:
            log.warning("cgroup %s: %s; this run relies on rlimits", path, exc)
            try:
                path.rmdir()
            except OSError:
                pass
            return None

    def controls(self) -> str:
        try:
            pids = "pids" in (self.path.parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            pids = False
        return "memory.max, pids.max" if pids else "memory.max"

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def _write(self, name: str, value: str, optional: bool = False) -> None:
        try:
            (self.path / name).write_text(value)
        except OSError:  # an optional control whose controller is not enabled here: absent or not writable
            if not optional:
                raise

    def _counter(self, name: str, key: str) -> int:
        try:
            for line in (self.path / name).read_text().splitlines():
                field, _, value = line.partition(" ")
                if field == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def limits_fired(self) -> list[str]:
        fired = []
        if self._counter("memory.events", "oom_kill") or self._counter("memory.events", "max") and \
                self._counter("memory.events", "oom"):
            fired.append("memory")
        if self._counter("pids.events", "max"):
            fired.append("processes")
        return fired

    def peak_memory(self) -> int | None:
        try:
            return int((self.path / "memory.peak").read_text())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Kill anything still in it (there should be nothing: the sandbox's PID 1 is gone) and remove it."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            pass
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
        log.warning("cgroup %s could not be removed", self.path)
