"""Touching what a sandboxed run left behind, and writing our own results, without trusting either.

A workdir is written by hostile code: it may hold symlinks to /root/.ssh, a tree 10,000
directories deep, FIFOs, files where directories are expected, names of any bytes. So here:
- nothing follows a symlink: walks use lstat/d_type and open every component with O_NOFOLLOW
  relative to its parent's fd (no path is ever re-resolved from the top);
- nothing recurses: walks and removal are loops with their own stacks, so depth costs memory,
  not Python frames (shutil.rmtree raises RecursionError on a deep enough tree);
- only regular files are copied or read, within a file count, a byte total and a depth;
- results go into a fresh directory with O_CREAT|O_EXCL|O_NOFOLLOW, so nothing planted in
  advance (a symlink named like our output) is written through;
- every problem becomes a status with a reason (`Collected`, `remove_tree`'s return), never a traceback.

The sandbox (bubblewrap) never shows a run our out dir or anyone else's files, and every process of a
run is dead before these run, so what they guard against is the tree's shape, not a race with it.

The pieces live in sibling modules: `safefs_beneath` (opening, reading and writing beneath a root),
`safefs_remove` (removal) and `safefs_collect` (copying and finding files). This module adds
`OutputDir`, where the trusted side writes, and every name callers used from it is importable here.
"""
from __future__ import annotations

import os
from pathlib import Path

from .safefs_beneath import UnsafePath, _parts, open_dir, open_dir_beneath, read_beneath, write_beneath
from .safefs_collect import (MAX_COLLECT_BYTES, MAX_COLLECT_DEPTH, MAX_COLLECT_FILES, Collected, OutputDirNotFresh,
                             collect_tree, find_regular_files, make_fresh_dir)
from .safefs_remove import remove_tree


# --- our own outputs -------------------------------------------------------------------------------------
class OutputDir:
    """Where the trusted side writes its results (report.json, artifacts): created fresh, or taken
    when it is an empty plain directory; every write is O_EXCL|O_NOFOLLOW beneath it.

        out = OutputDir("triage-out")          # OutputDirNotFresh if it has content
        out.write_text("report.json", text)
        out.collect(Path(run.workdir) / "torch_compile_debug", "artifacts/torch_compile_debug")
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        fd = make_fresh_dir(self.path)
        os.close(fd)

    def _root(self) -> int:
        return open_dir(self.path)

    def write_bytes(self, relative: str, data: bytes, replace: bool = True) -> Path:
        """Write (or, with `replace`, rename a fresh copy over) `relative`; never through a symlink."""
        root = self._root()
        try:
            write_beneath(root, relative, data, replace=replace)
        finally:
            os.close(root)
        return self.path / relative

    def write_text(self, relative: str, text: str, replace: bool = True) -> Path:
        return self.write_bytes(relative, text.encode("utf-8"), replace=replace)

    def collect(self, source: str | os.PathLike, relative: str, **caps) -> Collected:
        """Copy a run's tree into `relative` here (which must not exist yet, or be empty)."""
        root = self._root()
        try:
            parts = _parts(relative)
            parent = open_dir_beneath(root, "/".join(parts[:-1]), create=True)
            os.close(parent)
        except OSError as exc:
            return Collected("refused", f"{relative}: {exc.strerror or exc}")
        finally:
            os.close(root)
        return collect_tree(source, self.path / relative, **caps)


# Names callers import from here; most are defined in the sibling modules above.
__all__ = ["MAX_COLLECT_BYTES", "MAX_COLLECT_DEPTH", "MAX_COLLECT_FILES", "Collected", "OutputDir", "OutputDirNotFresh",
           "UnsafePath", "collect_tree", "find_regular_files", "make_fresh_dir", "open_dir", "open_dir_beneath",
           "read_beneath", "remove_tree", "write_beneath"]
