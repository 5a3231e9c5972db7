"""What a run adds to the host's disk, watched while it runs.

A run's workdir and its job's cache are host directories (the artifacts and the compile cache must
outlive the sandbox), and RLIMIT_FSIZE caps one file, not how many: a hostile repro could write
until the host's disk is full, and every other job on the runner would fail with it. So while a
run is on, a thread reads the free space of the filesystems those directories are on (`statvfs`,
a constant-time call) every `POLL_S`, and the run is killed (limit `disk`) once it has taken more
than its `max_disk_bytes`, or once the disk is nearly full and this run has been writing to it.
The drop in free space is the filesystem's, so another job's writes count too: the cap is a
guard for the host, generous beside what a repro needs (Inductor's cache of a model is megabytes).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

POLL_S = 0.5
MiB, GiB = 1 << 20, 1 << 30
RESERVE_BYTES = 1 * GiB  # a disk with less than this free is nearly full, whatever its size
NEARLY_FULL_MIN_USE = 256 * MiB  # a run is blamed for a nearly full disk only once it wrote this much


@dataclass(frozen=True)
class Space:
    free: int
    total: int


def space(path: str) -> Space | None:
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return Space(stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize)


def over(start: Space, now: Space, cap: int) -> bool:
    """Whether the run has taken too much: more than `cap` since it started, or enough to count while
    the disk is nearly full (pure: the decision apart from the polling)."""
    used = start.free - now.free
    nearly_full = now.free < RESERVE_BYTES
    return used > cap or (nearly_full and used > NEARLY_FULL_MIN_USE)


class DiskWatch:
    """Polls the filesystems of `paths` until stopped; calls `on_exceed` once when `over`."""

    def __init__(self, paths: Iterable[str], cap: int, on_exceed: Callable[[], None], poll_s: float = POLL_S):
        self.cap, self.on_exceed, self.poll_s = cap, on_exceed, poll_s
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
        while not self._stop.wait(self.poll_s):
            for path, start in self.starts.items():
                now = space(path)
                if now is not None and over(start, now, self.cap):
                    self.on_exceed()
                    return


def watch_run(paths: Iterable[str | None], cap: int | None, on_exceed: Callable[[], None]) -> DiskWatch:
    """A DiskWatch of the run's host directories (none when the spec sets no cap)."""
    return DiskWatch([p for p in paths if p] if cap else [], cap or 0, on_exceed)
