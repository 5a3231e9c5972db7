"""Unsafe mode: running without bubblewrap, only when the caller says so (`--unsafe-no-sandbox`).

Kept apart so the weaker path is easy to see and audit: unshare(1)'s network and PID namespaces
where they are permitted, rlimits and the scrubbed environment, and nothing more. Every run's
`RunResult.sandbox` says which isolation it got.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from functools import lru_cache

from . import bwrap
from .run_records import RunSpec

# unsafe mode: new network and PID namespaces; the PID namespace needs its own /proc (--mount-proc),
# without which CUDA cannot initialise (cudaGetDeviceCount fails with error 304 on an H100 host).
UNSHARE_FLAGS = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")

_unsafe_fallback = False


def allow_unsafe_fallback(allowed: bool = True) -> None:
    """The CLI's `--unsafe-no-sandbox`: where bubblewrap is missing or broken, run with the weaker
    isolation below instead of refusing. Where bubblewrap works it is still used. Every RunResult's
    `sandbox` says which a run got."""
    global _unsafe_fallback
    _unsafe_fallback = allowed


def unsafe_fallback_needed() -> bool:
    """The fallback was allowed and bubblewrap cannot run here."""
    return _unsafe_fallback and not bwrap.bubblewrap().ok


def effective(spec: RunSpec) -> RunSpec:
    """The spec as it will run: unsafe when the fallback is allowed and needed."""
    if not spec.unsafe_no_sandbox and unsafe_fallback_needed():
        return replace(spec, unsafe_no_sandbox=True)
    return spec


@lru_cache(maxsize=1)
def namespace_support() -> tuple[bool, str]:
    """Whether `unshare` can give us new network+PID namespaces here (unsafe mode); probed once."""
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
