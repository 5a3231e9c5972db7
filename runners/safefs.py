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
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MiB = 1 << 20
MAX_COLLECT_BYTES = 200 * MiB
MAX_COLLECT_FILES = 20_000
MAX_COLLECT_DEPTH = 32
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never blocks us
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path that would leave its root, go through a symlink, or is not what it must be."""


class OutputDirNotFresh(RuntimeError):
    """The output directory exists and is not empty (or is not a plain directory): refusing to
    write into what may have been planted there."""


# --- opening beneath a root ----------------------------------------------------------------------------
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


# --- removal ---------------------------------------------------------------------------------------------
def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


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


# --- collection ------------------------------------------------------------------------------------------
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


def _collect(source_fd: int, dest_fd: int, max_bytes: int, max_files: int, max_depth: int,
             exclude: frozenset = frozenset()) -> Collected:
    files = copied = skipped = 0
    notes: list[str] = []
    # each frame: [source dir fd, dest dir fd (None until a file needs it), unused, name, depth, entries]
    stack = [[os.dup(source_fd), os.dup(dest_fd), None, "", 0, None]]
    try:
        while stack:
            frame = stack[-1]
            src, dst, _, _, depth, entries = frame
            if entries is None:
                try:
                    with os.scandir(src) as listing:
                        frame[5] = entries = sorted(((e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                                                     for e in listing), reverse=True)
                except OSError as exc:
                    notes.append(f"unreadable directory ({exc.strerror})")
                    frame[5] = entries = []
            if not entries:
                for fd in (src, dst):
                    if fd is not None:
                        os.close(fd)
                stack.pop()
                continue
            name, is_dir, is_file = entries.pop()
            if is_dir:
                if name in exclude:
                    continue
                if depth + 1 > max_depth:
                    skipped += 1
                    if "too deep" not in notes:
                        notes.append("too deep")
                    continue
                child = _open_subdir(name, src)
                if child is None:
                    skipped += 1
                    continue
                stack.append([child, None, None, name, depth + 1, None])
                continue
            if not is_file:
                skipped += 1  # symlink, FIFO, socket, device
                continue
            try:
                st = os.stat(name, dir_fd=src, follow_symlinks=False)
            except OSError:
                skipped += 1
                continue
            if files >= max_files or copied + st.st_size > max_bytes:
                skipped += 1
                if "caps reached" not in notes:
                    notes.append("caps reached")
                continue
            dst = _ensure_dest_dir(stack)
            try:
                done = _copy_file(src, name, st, dst, max_bytes - copied)
            except OSError as exc:
                notes.append(f"{exc.strerror}")
                skipped += 1
                continue
            if done < 0:
                skipped += 1
                continue
            files += 1
            copied += done
    except OSError as exc:
        for frame in stack:
            for fd in frame[:2]:
                if fd is not None:
                    os.close(fd)
        return Collected("partial" if files else "refused", f"stopped: {exc.strerror or exc}", files, copied, skipped)
    status = "partial" if skipped or notes else "copied"
    return Collected(status, "; ".join(dict.fromkeys(notes)), files, copied, skipped)


def _ensure_dest_dir(stack: list) -> int:
    """The destination directory of the top frame, made (with those of its ancestors) on first use,
    so directories holding nothing we copy are not created."""
    for index, frame in enumerate(stack):
        if frame[1] is None:
            parent_dst = stack[index - 1][1]
            try:
                os.mkdir(frame[3], 0o755, dir_fd=parent_dst)
            except FileExistsError:
                pass
            frame[1] = os.open(frame[3], DIR_FLAGS, dir_fd=parent_dst)
    return stack[-1][1]


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
                with os.scandir(fd) as entries:
                    listing = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in entries]
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
