"""Driving torch's own after_aot minifier (mechanism only: which failures deserve it is policy).

`TORCHDYNAMO_REPRO_AFTER=aot` makes a failing compile write `minifier_launcher.py` under
`torch_compile_debug/run_*/minifier/`; `python minifier_launcher.py minify` then shrinks the FX
graph and writes `repro.py` next to the launcher. Both steps run through the sandbox.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .sandbox import RunResult, RunSpec, run


@dataclass(frozen=True)
class MinifierRun:
    launcher_source: str | None  # minifier_launcher.py as torch wrote it
    repro_source: str | None  # the minimized repro.py, when minify succeeded
    first_run: RunResult  # the script under TORCHDYNAMO_REPRO_AFTER=aot
    minify_run: RunResult | None
    duration_s: float

    @property
    def note(self) -> str:
        if self.launcher_source is None:
            return "the failing run wrote no minifier_launcher.py (the failure may not come from the compiled graph)"
        if self.repro_source is None:
            status = self.minify_run.status if self.minify_run else "not run"
            return f"minifier_launcher.py minify did not produce repro.py ({status})"
        return "repro.py written by torch's after_aot minifier"


def find_launcher(workdir: Path) -> Path | None:
    """The newest `minifier_launcher.py` torch wrote under `workdir`."""
    launchers = sorted(workdir.glob("**/minifier/minifier_launcher.py"), key=lambda p: p.stat().st_mtime)
    return launchers[-1] if launchers else None


def run_after_aot_minifier(script: str, *, level: int, env: Mapping[str, str] | None = None,
                           timeout_s: float = 600, python: str = sys.executable,
                           keep_dir: str | Path | None = None) -> MinifierRun:
    """Run `script` with the after_aot repro hooks at `level` (2: compile errors, 4: accuracy),
    then minify. `keep_dir`, if given, receives the minifier directory for the report."""
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="pt2-minifier-"))
    try:
        run_env = dict(env or {}, TORCHDYNAMO_REPRO_AFTER="aot", TORCHDYNAMO_REPRO_LEVEL=str(level))
        first = run(RunSpec(script=script, python=python, env=run_env, timeout_s=timeout_s, workdir=str(workdir)))
        launcher = find_launcher(workdir)
        if launcher is None:
            return MinifierRun(None, None, first, None, time.monotonic() - started)
        remaining = max(30.0, timeout_s - (time.monotonic() - started))
        minify = run(RunSpec(argv=(python, launcher.name, "minify"), python=python, env=dict(env or {}),
                             timeout_s=remaining, workdir=str(launcher.parent)))
        repro = launcher.parent / "repro.py"
        if keep_dir:
            shutil.copytree(launcher.parent, Path(keep_dir), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("torch_compile_debug", "checkpoints", "isolate"))
        return MinifierRun(launcher.read_text(errors="replace"), repro.read_text(errors="replace") if repro.is_file() else None,
                           first, minify, time.monotonic() - started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
