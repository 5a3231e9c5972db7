"""Removing a tree a run wrote, whatever its shape: following no symlink (a link is removed, never
its target), at any depth (a loop with its own stack, where shutil.rmtree recurses and raises
RecursionError on a deep enough tree), through directories the run made unenterable, and
reporting a problem instead of raising it.
"""
from __future__ import annotations

import errno
import os

from .safefs_beneath import DIR_FLAGS, UnsafePath, _open_subdir

def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _empty_entries(fd: int) -> list[str]:
    """Unlink everything in directory `fd` that is not a directory; return the subdirectories."""
    mode = os.fstat(fd).st_mode
    if mode & 0o300 != 0o300:
        try:
            os.fchmod(fd, 0o700)
        except OSError:
            pass
    subdirs = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except FileNotFoundError:
                    pass
    return subdirs


def _empty_dir(top_fd: int) -> None:
    """Remove everything under the directory `top_fd`, depth first, one fd open at a time: going up
    is `..` from the current directory, checked against the parent we came from."""
    current = os.dup(top_fd)
    try:
        current_id = _identity(current)
        pending = _empty_entries(current)
        ancestors: list[tuple[list[str], tuple[int, int], str]] = []
        while True:
            if pending:
                name = pending.pop()
                child = _open_subdir(name, current)
                if child is None:  # not a directory after all: unlink it
                    try:
                        os.unlink(name, dir_fd=current)
                    except FileNotFoundError:
                        pass
                    continue
                ancestors.append((pending, current_id, name))
                os.close(current)
                current, current_id = child, _identity(child)
                pending = _empty_entries(current)
                continue
            if not ancestors:
                return
            pending, parent_id, name = ancestors.pop()
            parent = os.open("..", DIR_FLAGS, dir_fd=current)
            if _identity(parent) != parent_id:
                os.close(parent)
                raise UnsafePath(errno.ESTALE, "the tree changed while it was being removed")
            os.close(current)
            current, current_id = parent, parent_id
            os.rmdir(name, dir_fd=current)
    finally:
        os.close(current)


def remove_tree(path: str | os.PathLike) -> str | None:
    """Remove `path` and everything under it, following no symlink (a symlink is removed, never its
    target) and at any depth. Returns None when it is gone, else why it is not (never raises)."""
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    try:
        parent_fd = os.open(parent or "/", DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot open {parent}: {exc.strerror}"
    try:
        child = _open_subdir(name, parent_fd)
        if child is None:
            os.unlink(name, dir_fd=parent_fd)
            return None
        try:
            _empty_dir(child)
        finally:
            os.close(child)
        os.rmdir(name, dir_fd=parent_fd)
        return None
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"could not remove {path}: {exc.strerror or exc}"
    finally:
        os.close(parent_fd)
