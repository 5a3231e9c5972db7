"""Facts about a runner for `pt2-triage doctor`: what the machine has, measured, with no verdicts.

Torch, CUDA and the compiler are probed in a sandboxed child (`probe.probe_machine`, so this
process never imports torch); namespaces the way the sandbox itself will use them; disk where
runs keep their workdirs and caches.
"""
from __future__ import annotations

import shutil
import sys
import tempfile

from . import sandbox
from .probe import probe_machine


def runner_facts(python: str = sys.executable, disk_path: str | None = None) -> dict:
    """A JSON-safe dict: the machine probe, plus `namespaces_ok`/`namespaces_note`, `disk_path`,
    `disk_free_bytes`, `tlparse` (its path or None) and `unshare` (its path or None)."""
    facts = dict(probe_machine(python))
    facts["namespaces_ok"], facts["namespaces_note"] = sandbox.namespace_support()
    facts["unshare"] = shutil.which("unshare")
    path = disk_path or tempfile.gettempdir()
    facts["disk_path"] = path
    try:
        facts["disk_free_bytes"] = shutil.disk_usage(path).free
    except OSError as exc:
        facts["disk_free_bytes"] = None
        facts["disk_error"] = exc.strerror
    facts["tlparse"] = shutil.which("tlparse") or _beside_python("tlparse", python)
    return facts


def _beside_python(name: str, python: str) -> str | None:
    """Console scripts of a venv live next to its python, which need not be on PATH."""
    from pathlib import Path

    candidate = Path(python).parent / name
    return str(candidate) if candidate.is_file() else None
