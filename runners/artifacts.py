"""Collecting what a diagnostic run leaves behind: TORCH_COMPILE_DEBUG folders and TORCH_TRACE logs,
plus the tlparse HTML report when the `tlparse` binary is installed.

A run's workdir is hostile (see runners/safefs.py): everything here copies regular files only,
follows no symlink, stays within caps, writes only into fresh directories, and reports a refused
or partial copy as a `Collected` status, never a traceback. tlparse itself runs in the sandbox, on a
copy of the log, and its report is collected the same way.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import safefs
from .safefs import Collected, collect_tree
from .sandbox import RunResult, RunSpec, run

MAX_ARTIFACT_BYTES = 200 << 20
MAX_TRACE_LOG_BYTES = 200 << 20


def tlparse_binary() -> str | None:
    """`tlparse` from PATH or next to this interpreter (pip puts it in the venv's bin/)."""
    beside = Path(sys.executable).with_name("tlparse")
    return str(beside) if beside.is_file() else shutil.which("tlparse")


def collect_artifacts(workdir: str | os.PathLike, relative: str, dest: str | os.PathLike,
                      max_bytes: int = MAX_ARTIFACT_BYTES) -> Collected:
    """Copy `relative` (a directory under a run's `workdir`, reached through plain directories only)
    into `dest`, a fresh or empty directory."""
    return collect_tree(relative, dest, root=workdir, max_bytes=max_bytes)


def copy_tree_capped(source: Path, dest: Path, max_bytes: int = MAX_ARTIFACT_BYTES) -> int:
    """Copy the regular files under `source` into `dest` (fresh or empty); returns bytes copied, 0
    when the copy was refused (`source` a symlink, `dest` not fresh, ...). `collect_tree` says why."""
    return collect_tree(source, dest, max_bytes=max_bytes).bytes


def newest_log(trace_dir: str | os.PathLike) -> str | None:
    """The name of the newest regular *.log directly in `trace_dir` (itself not a symlink)."""
    found = [(mtime, name) for name, mtime in safefs.find_regular_files(trace_dir, None, max_depth=0)
             if name.endswith(".log")]
    return max(found)[1] if found else None


def render_tlparse(trace_dir: Path, dest: Path, timeout_s: float = 300) -> RunResult | None:
    """Run tlparse over the newest log of a TORCH_TRACE folder, rendering into `dest` (fresh or empty);
    None when tlparse is not installed or there is no log. tlparse runs sandboxed on a copy."""
    binary = tlparse_binary()
    name = newest_log(trace_dir) if binary else None
    if binary is None or name is None:
        return None
    data = safefs.read_beneath(trace_dir, name, MAX_TRACE_LOG_BYTES)
    if data is None:
        return None
    workdir = tempfile.mkdtemp(prefix="pt2-tlparse-")
    try:
        root = safefs.open_dir(workdir)
        try:
            safefs.write_beneath(root, "trace.log", data)
        finally:
            os.close(root)
        result = run(RunSpec(argv=(binary, "trace.log", "-o", "tlparse", "--overwrite", "--no-browser"),
                             timeout_s=timeout_s, workdir=workdir, extra_ro_paths=(os.path.realpath(binary),)))
        collect_tree("tlparse", dest, root=workdir)
        return result
    finally:
        safefs.remove_tree(workdir)
