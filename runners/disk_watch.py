"""What a run adds to the host's disk, watched while it runs.

A run's workdir and its job's cache are host directories (the artifacts and the compile cache must
outlive the sandbox), and RLIMIT_FSIZE caps one file, not how many: a hostile repro could write
until the host's disk is full, and every other job on the runner would fail with it. So while a
run is on, a thread reads the free space of the filesystems those directories are on (`statvfs`,
a constant-time call) every `POLL_S`, and the run is killed (limit `disk`) once it has taken more
than its `max_disk_bytes`, or once the disk is nearly full and this run has been writing to it.
Files are counted too (`max_disk_files`, the free inodes `statvfs` reports): empty files take
no bytes, and a run creating ~20,000 a second ran ext4 out of inodes (every job on the host then
fails to create a file) long before it wrote its byte cap.
The drop in free space is the filesystem's, so another job's writes count too: the cap is a
guard for the host, generous beside what a repro needs (Inductor's cache of a model is megabytes).

A job's cache outlives each of its runs, so the caps are the job's, not each run's: a run starts
with what its job's cache already holds (`held`, a walk that stops once past the caps) taken off
them, and a run whose job's cache is already past them is stopped at once. Each run starting with
the whole cap, a minimization's hundred runs could each leave 16 GiB there.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from .safefs_beneath import _open_subdir, open_dir

POLL_S = 0.5
MiB, GiB = 1 << 20, 1 << 30
RESERVE_BYTES = 1 * GiB  # a disk with less than this free is nearly full, whatever its size
NEARLY_FULL_MIN_USE = 256 * MiB  # a run is blamed for a nearly full disk only once it wrote this much
RESERVE_FILES = 100_000  # a filesystem with fewer free inodes than this is nearly out of them
NEARLY_FULL_MIN_FILES = 10_000  # a run is blamed for that only once it made this many


@dataclass(frozen=True)
class Space:
    free: int
    total: int
    files_free: int = 0  # free inodes (0 with `files_total` 0: a filesystem that does not count them)
    files_total: int = 0


def space(path: str) -> Space | None:
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return Space(stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize, stat.f_favail, stat.f_files)


def over(start: Space, now: Space, cap: int, max_files: int | None = None) -> bool:
    """Whether the run has taken too much: more than `cap` bytes or `max_files` inodes since it
    started, or enough of either to count while the disk is nearly full of it (pure: the decision
    apart from the polling). `cap` 0 or `max_files` None: that measure is not capped."""
    used = start.free - now.free
    if cap and (used > cap or (now.free < RESERVE_BYTES and used > NEARLY_FULL_MIN_USE)):
        return True
    if not max_files or not now.files_total:  # no cap, or a filesystem without an inode count (btrfs)
        return False
    files = start.files_free - now.files_free
    return files > max_files or (now.files_free < RESERVE_FILES and files > NEARLY_FULL_MIN_FILES)


def held(root: str, max_bytes: int | None, max_files: int | None) -> tuple[int, int]:
    """(bytes of disk, entries) under directory `root` (a job's cache, which its runs wrote), walked
    without following a symlink and no further than needed to tell that one of the caps is passed."""
    used = files = 0
    try:
        stack = [open_dir(root)]
    except OSError:
        return 0, 0
    try:
        while stack:
            fd = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        files += 1
                        try:
                            used += entry.stat(follow_symlinks=False).st_blocks * 512
                            child = _open_subdir(entry.name, fd) if entry.is_dir(follow_symlinks=False) else None
                        except OSError:
                            child = None
                        if child is not None:
                            stack.append(child)
                        if (max_bytes and used > max_bytes) or (max_files and files > max_files):
                            return used, files
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)
    return used, files


class DiskWatch:
    """Polls the filesystems of `paths` until stopped; calls `on_exceed` once when `over` (at once,
    without polling, when `spent`: the job had used its caps before the run started)."""

    def __init__(self, paths: Iterable[str], cap: int, on_exceed: Callable[[], None], poll_s: float = POLL_S,
                 max_files: int | None = None, spent: bool = False):
        self.cap, self.max_files, self.on_exceed, self.poll_s, self.spent = cap, max_files, on_exceed, poll_s, spent
        self.starts = self._by_device(paths)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="disk-watch", daemon=True)

    @staticmethod
    def _by_device(paths: Iterable[str]) -> dict[str, Space]:
        """One path per filesystem, with its free space now."""
        found: dict[int, tuple[str, Space]] = {}
        for path in paths:
            try:
                device = os.stat(path).st_dev
            except OSError:
                continue
            start = space(path)
            if start is not None and device not in found:
                found[device] = (path, start)
        return dict(found.values())

    def __enter__(self) -> "DiskWatch":
        if self.starts:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        if self.spent:
            self.on_exceed()
            return
        while not self._stop.wait(self.poll_s):
            for path, start in self.starts.items():
                now = space(path)
                if now is not None and over(start, now, self.cap, self.max_files):
                    self.on_exceed()
                    return


def watch_run(paths: Iterable[str | None], cap: int | None, on_exceed: Callable[[], None],
              max_files: int | None = None, job_cache: str | None = None) -> DiskWatch:
    """A DiskWatch of the run's host directories (none when the spec caps neither bytes nor files),
    whose caps are what `job_cache` (the job's cache, kept between its runs) leaves of them."""
    paths = [p for p in paths if p] if cap or max_files else []
    spent = False
    if paths and job_cache:
        used, files = held(job_cache, cap, max_files)
        spent = bool((cap and used >= cap) or (max_files and files >= max_files))
        cap = cap and max(cap - used, 1)
        max_files = max_files and max(max_files - files, 1)
    return DiskWatch(paths, cap or 0, on_exceed, max_files=max_files, spent=spent)
