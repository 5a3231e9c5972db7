"""Copying the regular files of a run's tree into a fresh directory of ours, and finding files in
it, within caps on files, bytes and depth. Symlinks, devices, FIFOs and sockets are skipped, never
followed; walks are loops with their own stacks; what was skipped or refused comes back as a
`Collected` status with a reason, never a traceback.
"""
from __future__ import annotations

import itertools
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .safefs_beneath import CREATE_FLAGS, DIR_FLAGS, READ_FLAGS, UnsafePath, _open_subdir, open_dir, open_dir_beneath

MiB = 1 << 20
MAX_COLLECT_BYTES = 200 * MiB
MAX_COLLECT_FILES = 20_000
MAX_COLLECT_DEPTH = 32


class OutputDirNotFresh(RuntimeError):
    """The output directory exists and is not empty (or is not a plain directory): refusing to
    write into what may have been planted there."""


@dataclass(frozen=True)
class Collected:
    """What `collect_tree` did. status: copied (all of it) | partial (caps reached or entries
    skipped: symlinks, FIFOs, too deep) | refused (see reason) | missing (no such source)."""
    status: str
    reason: str = ""
    files: int = 0
    bytes: int = 0
    skipped: int = 0

    def __bool__(self) -> bool:
        return self.files > 0

    def to_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason, "files": self.files, "bytes": self.bytes,
                "skipped": self.skipped}


def make_fresh_dir(path: str | os.PathLike) -> int:
    """Create `path` (parents as needed) or accept it when it is an empty plain directory; return its fd.
    Raises OutputDirNotFresh otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    try:
        fd = open_dir(path)
    except UnsafePath as exc:
        raise OutputDirNotFresh(f"{path}: not a plain directory ({exc.strerror})") from None
    try:
        with os.scandir(fd) as entries:
            if any(True for _ in entries):
                raise OutputDirNotFresh(f"{path}: already has content; refusing to write into it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy_file(src_dir: int, name: str, expected: os.stat_result, dst_dir: int, budget: int) -> int:
    """Copy one regular file (up to `budget` bytes); returns bytes copied, or -1 if it is not the
    regular file lstat saw."""
    fd = os.open(name, READ_FLAGS, dir_fd=src_dir)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino):
            return -1
        out = os.open(name, CREATE_FLAGS, 0o644, dir_fd=dst_dir)
        copied = 0
        try:
            while copied < budget and (chunk := os.read(fd, min(1 << 20, budget - copied))):
                os.write(out, chunk)
                copied += len(chunk)
        finally:
            os.close(out)
        return copied
    finally:
        os.close(fd)


def collect_tree(source: str | os.PathLike, dest: str | os.PathLike, *, root: str | os.PathLike | None = None,
                 max_bytes: int = MAX_COLLECT_BYTES, max_files: int = MAX_COLLECT_FILES,
                 max_depth: int = MAX_COLLECT_DEPTH, exclude: tuple[str, ...] = ()) -> Collected:
    """Copy the regular files under `source` into `dest`, a fresh (or empty) directory, keeping the
    layout. Symlinks, devices, FIFOs and sockets are skipped, never followed; files past the caps are
    skipped; `source` itself must be a plain directory. With `root` (a run's workdir), `source` is
    relative to it and every directory on the way must be a plain one too. Never raises for anything
    the tree holds. `exclude`: names of directories not to enter, at any level."""
    try:
        if root is None:
            source_fd = open_dir(source)
        else:
            root_fd = open_dir(root)
            try:
                source_fd = open_dir_beneath(root_fd, source)
            finally:
                os.close(root_fd)
    except FileNotFoundError:
        return Collected("missing", f"{os.fspath(source)} does not exist")
    except OSError as exc:
        return Collected("refused", f"{os.fspath(source)}: not a plain directory ({exc.strerror or exc})")
    try:
        try:
            dest_fd = make_fresh_dir(dest)
        except (OutputDirNotFresh, OSError) as exc:
            return Collected("refused", str(exc))
        try:
            return _collect(source_fd, dest_fd, max_bytes, max_files, max_depth, frozenset(exclude))
        finally:
            os.close(dest_fd)
    finally:
        os.close(source_fd)


@dataclass
class _Frame:
    """A directory being copied: its fd, the fd of its copy (None until a file needs it, so that
    directories holding nothing we copy are never made), its name, depth, and the entries left
    (name, is_dir, is_file), popped from the end in name order."""
    source_fd: int
    dest_fd: int | None
    name: str
    depth: int
    entries: list[tuple[str, bool, bool]] | None = None

    def close(self) -> None:
        for fd in (self.source_fd, self.dest_fd):
            if fd is not None:
                os.close(fd)


@dataclass
class _TreeCopy:
    """One `collect_tree` walk: its caps, its stack of open directories, and what it did so far."""
    max_bytes: int
    max_files: int
    max_depth: int
    exclude: frozenset
    stack: list[_Frame] = field(default_factory=list)
    files: int = 0
    copied: int = 0  # bytes
    skipped: int = 0
    notes: list[str] = field(default_factory=list)

    def run(self, source_fd: int, dest_fd: int) -> Collected:
        self.stack = [_Frame(os.dup(source_fd), os.dup(dest_fd), "", 0)]
        try:
            while self.stack:
                frame = self.stack[-1]
                if frame.entries is None:
                    frame.entries = self._list(frame.source_fd)
                if not frame.entries:
                    frame.close()
                    self.stack.pop()
                    continue
                name, is_dir, is_file = frame.entries.pop()
                if is_dir:
                    self._enter(frame, name)
                elif not is_file:
                    self.skipped += 1  # symlink, FIFO, socket, device
                else:
                    self._copy(frame.source_fd, name)
        except OSError as exc:
            for frame in self.stack:
                frame.close()
            return Collected("partial" if self.files else "refused", f"stopped: {exc.strerror or exc}", self.files,
                             self.copied, self.skipped)
        status = "partial" if self.skipped or self.notes else "copied"
        return Collected(status, "; ".join(dict.fromkeys(self.notes)), self.files, self.copied, self.skipped)

    def _list(self, source_fd: int) -> list[tuple[str, bool, bool]]:
        try:
            with os.scandir(source_fd) as listing:  # no more of a huge directory than the file cap could copy
                entries = sorted(((e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                                  for e in itertools.islice(listing, self.max_files + 1)), reverse=True)
                if len(entries) > self.max_files and "caps reached" not in self.notes:
                    self.notes.append("caps reached")
                return entries
        except OSError as exc:
            self.notes.append(f"unreadable directory ({exc.strerror})")
            return []

    def _enter(self, frame: _Frame, name: str) -> None:
        if name in self.exclude:
            return
        if frame.depth + 1 > self.max_depth:
            self.skipped += 1
            if "too deep" not in self.notes:
                self.notes.append("too deep")
            return
        child = _open_subdir(name, frame.source_fd)
        if child is None:
            self.skipped += 1
            return
        self.stack.append(_Frame(child, None, name, frame.depth + 1))

    def _copy(self, source_fd: int, name: str) -> None:
        try:
            st = os.stat(name, dir_fd=source_fd, follow_symlinks=False)
        except OSError:
            self.skipped += 1
            return
        if self.files >= self.max_files or self.copied + st.st_size > self.max_bytes:
            self.skipped += 1
            if "caps reached" not in self.notes:
                self.notes.append("caps reached")
            return
        dest_fd = self._ensure_dest_dir()
        try:
            done = _copy_file(source_fd, name, st, dest_fd, self.max_bytes - self.copied)
        except OSError as exc:
            self.notes.append(f"{exc.strerror}")
            self.skipped += 1
            return
        if done < 0:
            self.skipped += 1
            return
        self.files += 1
        self.copied += done

    def _ensure_dest_dir(self) -> int:
        """The copy of the top frame's directory, made (with those of its ancestors) on first use."""
        for index, frame in enumerate(self.stack):
            if frame.dest_fd is None:
                parent_dest = self.stack[index - 1].dest_fd
                try:
                    os.mkdir(frame.name, 0o755, dir_fd=parent_dest)
                except FileExistsError:
                    pass
                frame.dest_fd = os.open(frame.name, DIR_FLAGS, dir_fd=parent_dest)
        return self.stack[-1].dest_fd


def _collect(source_fd: int, dest_fd: int, max_bytes: int, max_files: int, max_depth: int,
             exclude: frozenset = frozenset()) -> Collected:
    return _TreeCopy(max_bytes, max_files, max_depth, exclude).run(source_fd, dest_fd)


def find_regular_files(root: str | os.PathLike, name: str | None, max_depth: int = MAX_COLLECT_DEPTH,
                       max_entries: int = 200_000) -> list[tuple[str, float]]:
    """(relative path, mtime) of every regular file called `name` (None: any) under `root`, reached
    through plain directories only (no symlink followed), within `max_depth` and `max_entries` looked at."""
    found: list[tuple[str, float]] = []
    try:
        top = open_dir(root)
    except OSError:
        return found
    stack = [(top, "", 0)]
    seen = 0
    try:
        while stack:
            fd, prefix, depth = stack.pop()
            try:
                with os.scandir(fd) as entries:  # no more than the entries left to look at: a run's directory may hold millions
                    listing = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                               for e in itertools.islice(entries, max(0, max_entries - seen) + 1)]
            except OSError:
                listing = []
            for entry_name, is_dir, is_file in listing:
                seen += 1
                if seen > max_entries:
                    break
                relative = f"{prefix}{entry_name}"
                if is_file and (name is None or entry_name == name):
                    try:
                        found.append((relative, os.stat(entry_name, dir_fd=fd, follow_symlinks=False).st_mtime))
                    except OSError:
                        pass
                elif is_dir and depth < max_depth:
                    try:
                        child = _open_subdir(entry_name, fd)
                    except OSError:
                        child = None
                    if child is not None:
                        stack.append((child, relative + "/", depth + 1))
            os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return found
