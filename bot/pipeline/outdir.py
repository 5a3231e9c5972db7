"""Where a local triage writes its results (report.json, comment.md, artifacts/), safely.

A repro never sees this directory (the sandbox does not show it), but a directory on a shared
runner is still only as trustworthy as whatever wrote it last. So it is a fresh directory, or a
previous triage's output that is replaced whole; anything else is refused with a one-line reason.
Every file is written with O_EXCL|O_NOFOLLOW beneath it (runners/safefs.py), never through a link.
"""
from __future__ import annotations

import os
from pathlib import Path

from runners import safefs

# What marks a directory as a previous run's output of ours, safe to replace.
OUR_MARKERS = ("report.json", "comment.md")


class OutDirRefused(ValueError):
    """The directory is neither new, empty, nor a previous triage's output; the message says what to do."""


def prepare(path: Path) -> Path:
    """`path` as a fresh, empty plain directory (a previous triage's output there is removed first)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutDirRefused(f"{path}: not a plain directory; give a new --out")
    if path.is_dir() and any(path.iterdir()):
        if not any((path / marker).is_file() and not (path / marker).is_symlink() for marker in OUR_MARKERS):
            raise OutDirRefused(f"{path}: already holds files that are not a triage's output; give a new or empty --out")
        problem = safefs.remove_tree(path)
        if problem:
            raise OutDirRefused(f"{path}: the previous output could not be removed ({problem})")
    try:
        os.close(safefs.make_fresh_dir(path))
    except safefs.OutputDirNotFresh as exc:
        raise OutDirRefused(str(exc)) from None
    return path


def write_text(out_dir: Path, relative: str, text: str) -> Path:
    """Write `relative` under `out_dir` (made by `prepare`), replacing an older file of ours."""
    root = safefs.open_dir(out_dir)
    try:
        safefs.write_beneath(root, relative, text.encode("utf-8", errors="replace"), replace=True)
    finally:
        os.close(root)
    return out_dir / relative


def write_file(path: Path, text: str) -> Path:
    """Write one file the user named (`minimize --out FILE`) without following a link at its name."""
    parent = path.parent if str(path.parent) else Path(".")
    root = safefs.open_dir(parent)
    try:
        safefs.write_beneath(root, path.name, text.encode("utf-8", errors="replace"), replace=True)
    finally:
        os.close(root)
    return path
