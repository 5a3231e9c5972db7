"""Opening, reading and writing beneath a root directory, never through a symlink: the primitives
every walk, copy and removal of a hostile tree (`safefs`) is built on.

Each path component is opened with O_NOFOLLOW relative to its parent's fd, so no path is ever
re-resolved from the top, and a symlink or a non-directory on the way is an UnsafePath.
"""
from __future__ import annotations

import errno
import os
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never blocks us
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path that would leave its root, go through a symlink, or is not what it must be."""


def _parts(relative: str | os.PathLike) -> list[str]:
    text = os.fspath(relative)
    if os.path.isabs(text):
        raise UnsafePath(errno.EINVAL, f"{text!r} is not relative")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePath(errno.EINVAL, f"{text!r} leaves its root")
    return parts


def open_dir(path: str | os.PathLike) -> int:
    """An fd of `path`, which must be a directory itself (not a symlink to one)."""
    try:
        return os.open(path, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(exc.errno, f"{os.fspath(path)!r} is not a plain directory") from None
        raise


def open_dir_beneath(root_fd: int, relative: str | os.PathLike, create: bool = False, mode: int = 0o755) -> int:
    """The fd of directory `relative` under `root_fd`, every component a real directory (made if
    `create`). Raises UnsafePath for a symlink or a non-directory on the way."""
    fd = os.dup(root_fd)
    try:
        for part in _parts(relative):
            if create:
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(exc.errno, f"{os.fspath(relative)!r}: {part!r} is not a plain directory") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_beneath(root: str | os.PathLike, relative: str | os.PathLike, max_bytes: int) -> bytes | None:
    """The first `max_bytes` of regular file `relative` under `root`; None when it is missing, a
    symlink, a directory, a FIFO, or anything else than a plain file reached through plain dirs."""
    try:
        parts = _parts(relative)
        if not parts:
            return None
        root_fd = open_dir(root)
        try:
            dir_fd = open_dir_beneath(root_fd, "/".join(parts[:-1]))
        finally:
            os.close(root_fd)
        try:
            fd = os.open(parts[-1], READ_FLAGS, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], max_bytes
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_beneath(root_fd: int, relative: str | os.PathLike, data: bytes, mode: int = 0o644,
                  replace: bool = False, owner: tuple[int, int] | None = None) -> None:
    """Create file `relative` under `root_fd` (directories made as needed, none of them a symlink)
    with O_EXCL|O_NOFOLLOW. `replace`: write a fresh temporary name, then rename it over the old
    entry, which replaces a planted symlink instead of writing through it. `owner`: chown what we make."""
    parts = _parts(relative)
    if not parts:
        raise UnsafePath(errno.EINVAL, "empty file name")
    dir_fd = open_dir_beneath(root_fd, "/".join(parts[:-1]), create=True)
    try:
        if owner is not None:
            _chown_made_dirs(root_fd, parts[:-1], owner)
        name = parts[-1]
        temporary = f".{name}.{os.getpid()}.tmp" if replace else name
        fd = os.open(temporary, CREATE_FLAGS, mode, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if owner is not None:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
        if replace:
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _chown_made_dirs(root_fd: int, parts: list[str], owner: tuple[int, int]) -> None:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            os.fchown(fd, *owner)
    finally:
        os.close(fd)


def _open_subdir(name: str, parent_fd: int) -> int | None:
    """fd of subdirectory `name`, making it enterable if we own it; None if it is not a directory."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return None
        if exc.errno != errno.EACCES:
            raise
    path_fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
    try:
        if not stat.S_ISDIR(os.fstat(path_fd).st_mode):
            return None
        os.chmod(f"/proc/self/fd/{path_fd}", 0o700)  # a run may chmod 000 its own directories
    finally:
        os.close(path_fd)
    return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
