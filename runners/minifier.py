"""Driving torch's own after_aot minifier (mechanism only: which failures deserve it is policy).

`TORCHDYNAMO_REPRO_AFTER=aot` makes a failing compile write `minifier_launcher.py` under
`torch_compile_debug/run_*/minifier/`; `python minifier_launcher.py minify` then shrinks the FX
graph and writes `repro.py` next to the launcher. Both steps run through the sandbox, in the same
workdir (the launcher names its checkpoint directory by the path the first run saw), the second
one started in the launcher's directory.

Everything read back is treated as hostile: the launcher is found only as a regular file reached
through plain directories (a `minifier_launcher.py` that is a directory or a dangling symlink is
no launcher), sources are read capped, and the directory kept for the report is copied regular
files only into a fresh directory (a `minifier/loot -> /root/.ssh` symlink is skipped, not followed).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from . import safefs
from .sandbox import RunResult, RunSpec, run

MAX_SOURCE_BYTES = 4 << 20
KEEP_EXCLUDE = ("torch_compile_debug", "checkpoints", "isolate")


@dataclass(frozen=True)
class MinifierRun:
    launcher_source: str | None  # minifier_launcher.py as torch wrote it
    repro_source: str | None  # the minimized repro.py, when minify succeeded
    first_run: RunResult  # the script under TORCHDYNAMO_REPRO_AFTER=aot
    minify_run: RunResult | None
    duration_s: float
    kept: safefs.Collected | None = None  # how the copy into `keep_dir` went, when one was asked for

    @property
    def note(self) -> str:
        if self.launcher_source is None:
            return "the failing run wrote no minifier_launcher.py (the failure may not come from the compiled graph)"
        if self.repro_source is None:
            status = self.minify_run.status if self.minify_run else "not run"
            return f"minifier_launcher.py minify did not produce repro.py ({status})"
        return "repro.py written by torch's after_aot minifier"


def find_launcher(workdir: Path) -> str | None:
    """The newest regular `minifier/minifier_launcher.py` under `workdir`, relative to it."""
    found = [(mtime, relative) for relative, mtime in safefs.find_regular_files(workdir, "minifier_launcher.py")
             if os.path.basename(os.path.dirname(relative)) == "minifier"]
    return max(found)[1] if found else None


def _read_text(workdir: Path, relative: str) -> str | None:
    data = safefs.read_beneath(workdir, relative, MAX_SOURCE_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def run_after_aot_minifier(script: str, *, level: int, env: Mapping[str, str] | None = None,
                           timeout_s: float = 600, python: str = sys.executable,
                           keep_dir: str | Path | None = None) -> MinifierRun:
    """Run `script` with the after_aot repro hooks at `level` (2: compile errors, 4: accuracy),
    then minify. `keep_dir`, if given (fresh or empty), receives the minifier directory for the report."""
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="pt2-minifier-"))
    try:
        run_env = dict(env or {}, TORCHDYNAMO_REPRO_AFTER="aot", TORCHDYNAMO_REPRO_LEVEL=str(level))
        first = run(RunSpec(script=script, python=python, env=run_env, timeout_s=timeout_s, workdir=str(workdir)))
        launcher = find_launcher(workdir)
        source = _read_text(workdir, launcher) if launcher else None
        if launcher is None or source is None:
            return MinifierRun(None, None, first, None, time.monotonic() - started)
        minifier_dir = os.path.dirname(launcher)
        remaining = max(30.0, timeout_s - (time.monotonic() - started))
        minify = run(RunSpec(argv=(python, "minifier_launcher.py", "minify"), python=python, env=dict(env or {}),
                             timeout_s=remaining, workdir=str(workdir), cwd=minifier_dir))
        repro = _read_text(workdir, f"{minifier_dir}/repro.py")
        kept = None
        if keep_dir:
            kept = safefs.collect_tree(minifier_dir, keep_dir, root=workdir, exclude=KEEP_EXCLUDE)
        return MinifierRun(source, repro, first, minify, time.monotonic() - started, kept)
    finally:
        safefs.remove_tree(workdir)
