"""Bubblewrap: whether it can start a sandbox here, and the argv that starts one.

The argv is an allowlist: read-only binds of the system, the interpreter's prefixes and the
machine's toolchain, our runner files under /.pt2, and only the writable directories a caller
names. As root, sources the sandbox uid cannot walk to are staged by `_stage.py` first. Cold runs
(`sandbox.py`) and the warm server (`worker_launch.py`) both build theirs here, so the two
sandboxes cannot drift apart.
"""
from __future__ import annotations

import atexit
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from . import seccomp
from .run_env import SAFE_PATH
from .run_records import INSIDE_HOME, INSIDE_RUNNER, SANDBOX_GID, SANDBOX_UID, SandboxUnavailable

RUNNERS = Path(__file__).resolve().parent
STAGE_HELPER = RUNNERS / "_stage.py"
SYSTEM_RO = ("/usr", "/etc", "/sys")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")  # symlinks into /usr on merged-/usr hosts
# Directories an interpreter prefix must not be, nor contain: binding one would show what the sandbox hides.
NEVER_BIND = ("/", "/root", "/home", "/tmp", "/run", "/var", "/proc", "/dev", "/boot", "/mnt", "/media", "/srv", "/opt")
GPU_DEVICES = "/dev/nvidia*"
BWRAP_FIX = "install bubblewrap (apt-get install bubblewrap) or pass --unsafe-no-sandbox"


@dataclass(frozen=True)
class Bubblewrap:
    path: str | None
    version: str | None
    ok: bool
    note: str


def sandbox_owner() -> tuple[int, int, bool]:
    """(uid, gid) the sandbox runs as outside, and whether we must drop to it (we are root)."""
    if os.geteuid() == 0:
        return SANDBOX_UID, SANDBOX_GID, True
    return os.getuid(), os.getgid(), False


@lru_cache(maxsize=1)
def bubblewrap() -> Bubblewrap:
    """Is bubblewrap installed, and does a trial sandbox (the way runs use it) start? Probed once."""
    path = shutil.which("bwrap")
    if path is None:
        return Bubblewrap(None, None, False, f"bubblewrap (bwrap) is not installed; {BWRAP_FIX}")
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        version = version.split()[-1] if version else None
        trial = _bwrap_trial(path)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Bubblewrap(path, None, False, f"bubblewrap failed to run ({exc}); {BWRAP_FIX}")
    if trial.returncode != 0 or trial.stdout.strip() != b"sandbox-ok":
        reason = trial.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {trial.returncode}"]
        return Bubblewrap(path, version, False, f"bubblewrap cannot start a sandbox here ({reason[0]}); "
                                                "unprivileged user namespaces may be disabled "
                                                "(sysctl kernel.unprivileged_userns_clone=1)")
    return Bubblewrap(path, version, True, f"bubblewrap {version}")


def _bwrap_trial(path: str) -> subprocess.CompletedProcess:
    """`echo sandbox-ok` in a sandbox made the way runs make theirs (minus the interpreter)."""
    uid, gid, drop = sandbox_owner()
    program = seccomp.build_filter("strict")
    read_fd = _pipe_with(program)
    try:
        argv = [path, *_bwrap_base(), *_system_binds(), "--seccomp", str(read_fd), "--disable-userns",
                "--", "/bin/sh", "-c", "echo sandbox-ok"]
        kwargs = {"user": uid, "group": gid, "extra_groups": []} if drop else {}
        return subprocess.run(argv, capture_output=True, timeout=20, pass_fds=(read_fd,), env={"PATH": SAFE_PATH},
                              cwd="/", **kwargs)
    finally:
        os.close(read_fd)


def _bwrap_base(die_with_parent: bool = True) -> list[str]:
    """Namespaces and identity: inside, always uid/gid 65534, whoever we are outside.
    `die_with_parent`: the sandbox dies when the thread that started it does (PR_SET_PDEATHSIG
    follows the thread, not the process: right for a run its thread waits for, wrong for the warm
    server, which a short-lived thread may start and which exits when its socket closes anyway)."""
    return ["--unshare-all", "--unshare-user", *(["--die-with-parent"] if die_with_parent else []), "--new-session",
            "--as-pid-1", "--cap-drop", "ALL", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID),
            "--hostname", "sandbox"]


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_RO:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in SYSTEM_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--proc", "/proc", "--dev", "/dev"]


def _pipe_with(data: bytes) -> int:
    """A pipe's read end that yields `data` then EOF (for bwrap --seccomp)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)  # a few hundred bytes: fits the pipe buffer
    finally:
        os.close(write_fd)
    return read_fd


@lru_cache(maxsize=16)
def _interpreter_dirs_cached(python: str, mtime: float) -> tuple[str, ...]:
    del mtime  # part of the cache key: a rebuilt venv is probed again
    code = ("import json, site, sys\n"
            "print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]"
            " + list(site.getsitepackages())))")
    try:
        probe = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                               env={"PATH": SAFE_PATH, "LANG": "C.UTF-8"}, cwd="/")
        paths = json.loads(probe.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return ()
    found: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    return tuple(found)


def interpreter_dirs(python: str) -> tuple[str, ...]:
    """The directories `python` needs besides the system ones: its prefixes and site-packages, real
    paths, outermost only. Empty when it cannot be probed (the run then fails with exit 127).
    Raises SandboxUnavailable when one of them would expose a home or the host's /tmp."""
    executable = shutil.which(python) or python
    try:
        mtime = os.stat(executable).st_mtime
    except OSError:
        return ()
    dirs = [d for d in _interpreter_dirs_cached(executable, mtime) if not _under_any(d, SYSTEM_RO)]
    for path in dirs:
        exposed = [p for p in NEVER_BIND + (os.path.expanduser("~"),) if _under_any(p, (path,))]
        if exposed:
            raise SandboxUnavailable(f"the interpreter {python} lives in {path}, which holds {exposed[0]}; "
                                     "binding it would show it to the script: use a virtualenv in a directory of its own")
    outermost = [d for d in dirs if not any(d != other and _under_any(d, (other,)) for other in dirs)]
    return tuple(sorted(set(outermost)))


TOOLCHAIN_VARIABLES = ("CC", "CXX")  # compilers Inductor and Triton call, as this machine configures them
TOOLCHAIN_DIR_VARIABLES = ("CUDA_HOME",)


def toolchain_dirs(env: Mapping[str, str]) -> tuple[str, ...]:
    """Directories outside the system ones that the machine's toolchain variables point to (a
    compiler named by CC in /opt/gcc/bin: its whole /opt/gcc; CUDA_HOME; LD_LIBRARY_PATH entries), to
    show read-only. Their values come from the runner's own environment or the caller's spec, never
    from the script. Raises SandboxUnavailable for one that would show a home or the host's /tmp."""
    found: list[str] = []
    for name in TOOLCHAIN_VARIABLES:
        program = env.get(name, "").split()[0] if env.get(name, "").strip() else ""
        resolved = shutil.which(program, path=env.get("PATH", SAFE_PATH)) if program else None
        if resolved:
            parent = os.path.dirname(os.path.realpath(resolved))
            found.append(os.path.dirname(parent) if os.path.basename(parent) == "bin" else parent)
    for name in TOOLCHAIN_DIR_VARIABLES:
        if env.get(name):
            found.append(os.path.realpath(env[name]))
    found += [os.path.realpath(p) for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    dirs = []
    for path in found:
        if not os.path.isdir(path) or _under_any(path, SYSTEM_RO) or path in dirs:
            continue
        exposed = [p for p in NEVER_BIND + (os.path.expanduser("~"),) if _under_any(p, (path,))]
        if exposed:
            raise SandboxUnavailable(f"the toolchain directory {path} (from CC, CXX, CUDA_HOME or LD_LIBRARY_PATH) "
                                     f"holds {exposed[0]}; binding it would show it to the script")
        dirs.append(path)
    return tuple(dirs)


def _under_any(path: str, roots) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def reachable_by(path: str, uid: int, gid: int) -> bool:
    """Could uid/gid (no supplementary groups) walk to `path`? (Search permission on every ancestor.)"""
    current = "/"
    for part in Path(path).parts[1:-1] if path != "/" else ():
        current = os.path.join(current, part)
        try:
            st = os.stat(current)
        except OSError:
            return False
        if st.st_uid == uid:
            allowed = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            allowed = st.st_mode & stat.S_IXGRP
        else:
            allowed = st.st_mode & stat.S_IXOTH
        if not allowed:
            return False
    return True


_stage_lock = threading.Lock()
_stage_dirs: list[str] = []


def stage_dir() -> str:
    """An empty directory root's staging helper mounts on (in its own mount namespace only); in /tmp,
    which the sandbox uid can walk through, whatever TMPDIR says."""
    with _stage_lock:
        if not _stage_dirs or not os.path.isdir(_stage_dirs[-1]):
            path = tempfile.mkdtemp(prefix="pt2-stage-", dir="/tmp")
            os.chmod(path, 0o755)
            _stage_dirs.append(path)
            atexit.register(lambda: os.rmdir(path) if os.path.isdir(path) else None)
        return _stage_dirs[-1]


@dataclass
class Binds:
    """Host paths for bwrap, as (option, source, destination); `command` turns them into argv, staging
    the sources the sandbox uid cannot walk to when we must drop privileges first."""
    entries: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, option: str, source: str, dest: str) -> None:
        self.entries.append((option, os.path.realpath(source), dest))

    def command(self, bwrap_path: str, head: list[str], tail: list[str], cgroup_procs: str | None = None) -> tuple[list[str], dict]:
        """(argv, Popen keyword arguments): bwrap directly, or through _stage.py when we are root."""
        uid, gid, drop = sandbox_owner()
        staged: list[str] = []
        args = [bwrap_path, *head]
        for option, source, dest in self.entries:
            if drop and not reachable_by(source, uid, gid):
                staged.append(source)
                source = os.path.join(stage_dir(), str(len(staged) - 1))
            args += [option, source, dest]
        args += tail
        if not staged and cgroup_procs is None:
            return args, ({"user": uid, "group": gid, "extra_groups": []} if drop else {})
        head = [stage_dir() if staged else "-", str(uid) if drop else "-", str(gid) if drop else "-",
                cgroup_procs or "-"]
        return [sys.executable, "-I", "-S", str(STAGE_HELPER), *head, *staged, "--", *args], {}


def require_bubblewrap() -> Bubblewrap:
    found = bubblewrap()
    if not found.ok:
        raise SandboxUnavailable(found.note if BWRAP_FIX in found.note else f"{found.note}; {BWRAP_FIX}")
    return found


def bwrap_command(inner: list[str], *, python: str, writable: list[tuple[str, str]], chdir: str, seccomp_fd: int,
                  symlinks: list[tuple[str, str]] = (),
                  tmp_bytes: int, strict: bool = True, gpu: bool = False, share_net: bool = False,
                  runner_files: tuple[str, ...] = ("_launcher.py", "_bootstrap.py", "_torch_probe.py"), scratch: tuple[str, ...] = (),
                  scratch_bytes: int = 1 << 20, cgroup_procs: str | None = None, read_only: tuple[str, ...] = (),
                  die_with_parent: bool = True, env: Mapping[str, str] | None = None) -> tuple[list[str], dict]:
    """bwrap argv (and Popen kwargs) running `inner` in a sandbox: the system read-only, the
    interpreter's directories read-only, our `runner_files` under /.pt2, `writable` (host path,
    inside path) read-write, `symlinks` (target, link) made inside (a path the sandbox may write is
    reached through a link, not bound: bubblewrap resolves a bind's source when it mounts it), / and
    /dev read-only, `scratch` private tmpfs of `scratch_bytes` each
    (the warm server's: torch makes its cache directory at import, its preload copies the ISA
    probes there, and its children mount each run there).
    `strict`: no further user namespaces (cold runs)."""
    found = require_bubblewrap()
    head = [*_bwrap_base(die_with_parent), *_system_binds()]
    if gpu:
        for device in sorted(glob.glob(GPU_DEVICES)):
            head += ["--dev-bind", device, device]
    head += ["--size", str(tmp_bytes), "--tmpfs", "/tmp", "--dir", INSIDE_HOME,
             "--size", str(tmp_bytes), "--tmpfs", "/dev/shm"]
    if share_net:
        head.append("--share-net")
    binds = Binds()
    for path in interpreter_dirs(python):  # the launcher runs on it even when argv is another program
        binds.add("--ro-bind", path, path)
    for path in toolchain_dirs(env or {}):
        binds.add("--ro-bind", path, path)
    for name in runner_files:
        binds.add("--ro-bind", str(RUNNERS / name), f"{INSIDE_RUNNER}/{name}")
    for path in read_only:
        if not _under_any(os.path.realpath(path), SYSTEM_RO):
            binds.add("--ro-bind", path, os.path.realpath(path))
    for source, dest in writable:
        binds.add("--bind", source, dest)
    tail = [arg for path in scratch for arg in ("--size", str(scratch_bytes), "--tmpfs", path)]
    tail += [arg for target, link in symlinks for arg in ("--symlink", target, link)]
    # / (bubblewrap's tmpfs) and /dev stay read-only: neither is size-capped, and both are RAM
    tail += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", chdir, "--seccomp", str(seccomp_fd)]
    if strict:
        tail.append("--disable-userns")
    tail += ["--", *inner]
    return binds.command(found.path, head, tail, cgroup_procs)
