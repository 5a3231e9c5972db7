"""Collecting what a diagnostic run leaves behind: TORCH_COMPILE_DEBUG folders and TORCH_TRACE logs,
plus the tlparse HTML report when the `tlparse` binary is installed."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .sandbox import RunResult, RunSpec, run

MAX_ARTIFACT_BYTES = 200 << 20


def tlparse_binary() -> str | None:
    """`tlparse` from PATH or next to this interpreter (pip puts it in the venv's bin/)."""
    beside = Path(sys.executable).with_name("tlparse")
    return str(beside) if beside.is_file() else shutil.which("tlparse")


def copy_tree_capped(source: Path, dest: Path, max_bytes: int = MAX_ARTIFACT_BYTES) -> int:
    """Copy `source` into `dest`, skipping files once `max_bytes` are copied; returns bytes copied."""
    copied = 0
    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink()):
        size = path.stat().st_size
        if copied + size > max_bytes:
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += size
    return copied


def render_tlparse(trace_dir: Path, dest: Path, timeout_s: float = 300) -> RunResult | None:
    """Run tlparse over a TORCH_TRACE folder into `dest`; None when tlparse is not installed."""
    binary = tlparse_binary()
    logs = sorted(trace_dir.glob("*.log"), key=lambda p: p.stat().st_mtime) if trace_dir.is_dir() else []
    if binary is None or not logs:
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    return run(RunSpec(argv=(binary, str(logs[-1]), "-o", str(dest), "--overwrite", "--no-browser"),
                       timeout_s=timeout_s, workdir=str(dest.parent), isolate_network=True))
