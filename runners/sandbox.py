"""The only place that starts processes: run an untrusted script with limits, no secrets, and a view of
the machine that holds nothing worth taking.

Every run (bubblewrap, `bwrap`, is required; see "Without bubblewrap" below) gets
- its own user, PID, network, IPC, UTS and cgroup namespaces (`bwrap --unshare-all`): no network,
  not even loopback; no view of the host's processes or their /proc/PID/environ; no unix socket of
  the host (no host /tmp, /run or /var is shown); and a fresh /proc, /dev and a size-capped /tmp,
- a filesystem that is an allowlist of read-only binds: /usr (with /bin, /sbin, /lib* as on the
  host), /etc, /sys, the interpreter's prefixes and site-packages, and the toolchain the machine
  names in CC, CXX, CUDA_HOME and LD_LIBRARY_PATH when it lies elsewhere; the run's workdir is the one
  writable host directory, at /sandbox, plus the job's compile cache at /cache when the caller gives
  one; our launcher and bootstrap are single read-only files under /.pt2. Not shown: /root, /home, the
  host's /tmp, /run and /var, this checkout, the caller's output directory, other runs' workdirs,
- uid/gid 65534 with no capabilities and no_new_privs. When we run as root the sandbox is started
  unprivileged, as 65534 outside too (`_stage.py` drops to it first): root's bubblewrap would map the
  sandbox uid to root outside, and root's files (/etc/shadow) would be readable. A non-root caller's
  sandbox runs as the caller outside, and sees none of the caller's files but those above,
- a seccomp filter (runners/seccomp.py: no mount, namespaces, ptrace, bpf, keyring, io_uring, ...) and
  no further user namespaces (`--disable-userns`),
- an environment built from scratch: PATH, HOME (in /tmp), locale, caches in the workdir, a short
  allow list of hardware variables, and the caller's diagnostics; a name that looks like a
  credential is refused outright, so a token cannot reach a repro even by mistake,
- limits: rlimits on CPU time, address space, file size, processes (threads count) and core dumps
  (applied by `_launcher.py` to the script), or, where a delegated cgroup v2 is writable, memory.max
  and pids.max over the whole run (`runners/cgroups.py`); `RunResult.limits_mechanism` says which.
  The workdir's total size cannot be capped without filesystem quotas; /tmp and /dev/shm are tmpfs of
  `tmp_bytes` each, gone with the run,
- a wall-clock timeout: the whole sandbox is killed (bubblewrap's child is PID 1 of the run's PID
  namespace, so nothing the script started outlives it, daemons included),
- output capped while it is read (the first quarter and the last three quarters of the cap kept,
  the middle counted and dropped), so a script printing a gigabyte costs us at most ~2x the cap,
- evidence it cannot forge into a failure: the exit status comes from the launcher (PID 1, which
  the script can neither signal nor inspect), and an uncaught exception is reported by our bootstrap
  (`_bootstrap.py`) as JSON on a private pipe, kept only when the run did not exit 0
  (`RunResult.uncaught_exception`). Printed text never counts as evidence.

Without bubblewrap `run` raises SandboxUnavailable, unless the spec says `unsafe_no_sandbox=True`:
then the run gets the old, weaker isolation (unshare's network and PID namespaces when permitted,
rlimits, the scrubbed environment) and says so in `RunResult.sandbox`.
"""
from __future__ import annotations

import atexit
import fnmatch
import glob
import json
import logging
import os
import pwd
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from . import cgroups, safefs, seccomp

log = logging.getLogger(__name__)

GiB = 1 << 30
MiB = 1 << 20
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Hardware and toolchain variables a repro may need; never caches (those go in the workdir).
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
                "CC", "CXX", "OMP_NUM_THREADS", "TZ", "CUDA_HOME", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
SECRET_PATTERNS = ("*TOKEN*", "*SECRET*", "*_KEY", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "GITHUB_*",
                   "ACTIONS_*", "RUNNER_*", "AWS_*", "PT2_TRIAGE_*", "SSH_AUTH_SOCK")
OUTPUT_KILL_FACTOR = 64  # a stream past max(cap * this, OUTPUT_KILL_MIN_BYTES) gets the run killed
OUTPUT_KILL_MIN_BYTES = 64 * MiB
TERM_GRACE_S = 1.0  # unsafe mode: between SIGTERM and SIGKILL on timeout, time for the launcher to clean up
RUNNERS = Path(__file__).resolve().parent
LAUNCHER = RUNNERS / "_launcher.py"
BOOTSTRAP = RUNNERS / "_bootstrap.py"
STAGE_HELPER = RUNNERS / "_stage.py"
# unsafe mode: new network and PID namespaces; the PID namespace needs its own /proc (--mount-proc),
# without which CUDA cannot initialise (cudaGetDeviceCount fails with error 304 on an H100 host).
UNSHARE_FLAGS = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")
OUR_KILLS = ("SIGKILL", "SIGTERM")  # how a run we stopped (timeout, output flood) ends

# Inside the sandbox: fixed paths, so nothing of the host's layout shows in outputs.
SANDBOX_UID = SANDBOX_GID = 65534
INSIDE_WORKDIR = "/sandbox"
INSIDE_CACHE = "/cache"
INSIDE_RUNNER = "/.pt2"
INSIDE_HOME = "/tmp/home"
JOB_INDUCTOR_TMP = "inductor_tmp"  # in a job's cache dir: what Inductor keeps in its default dir (precompiled headers)
SYSTEM_RO = ("/usr", "/etc", "/sys")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")  # symlinks into /usr on merged-/usr hosts
# Directories an interpreter prefix must not be, nor contain: binding one would show what the sandbox hides.
NEVER_BIND = ("/", "/root", "/home", "/tmp", "/run", "/var", "/proc", "/dev", "/boot", "/mnt", "/media", "/srv", "/opt")
GPU_DEVICES = "/dev/nvidia*"
BWRAP_FIX = "install bubblewrap (apt-get install bubblewrap) or pass --unsafe-no-sandbox"
MAX_EVIDENCE_READ = 256 << 10


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here (no bubblewrap, or it fails to start); the message ends with the fix."""


@dataclass(frozen=True)
class RunSpec:
    """What to run and under which limits. Exactly one of `argv` and `script`."""
    argv: tuple[str, ...] | None = None
    script: str | None = None  # written to repro.py in the workdir and run like `python repro.py`
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)  # extra variables, e.g. TORCH_LOGS
    timeout_s: float = 300
    cpu_time_s: int | None = 600
    # 32, not 16 GiB: CUDA reserves virtual address space at init; measured on an H100 host
    # (torch 2.11+cu130), torch.ones(3, device="cuda") fails under 16 GiB and works under 32 GiB.
    address_space_bytes: int | None = 32 * GiB
    output_cap_bytes: int = 4 * MiB  # per stream
    files: Mapping[str, str] = field(default_factory=dict)  # extra files, relative to the workdir
    isolate_network: bool = True  # False shares the host's network namespace (trusted tools only)
    keep_workdir: bool = False
    workdir: str | None = None  # run here instead of a fresh temp dir (never removed; chowned to the sandbox uid as root)
    cache_dir: str | None = None  # the job's Inductor/Triton caches, shared by its runs (else per run, in the workdir)
    cwd: str | None = None  # where to start, relative to the workdir (default: the workdir)
    gpu: bool = False  # show the NVIDIA devices (/dev/nvidia*) to the run
    # Tasks (processes and threads) of the run; torch starts a thread per core and Inductor a pool of
    # compile workers, so this is generous: it stops fork bombs, not torch.
    max_processes: int | None = 4096
    max_file_bytes: int | None = 8 * GiB  # any one file the run writes (RLIMIT_FSIZE)
    memory_bytes: int | None = 64 * GiB  # the whole run's memory, only where a cgroup v2 enforces it
    tmp_bytes: int = 2 * GiB  # size of the run's private /tmp and of its /dev/shm (both tmpfs, in RAM)
    unsafe_no_sandbox: bool = False  # without bubblewrap: run anyway with weaker isolation (RunResult.sandbox says so)
    extra_ro_paths: tuple[str, ...] = ()  # trusted host paths (a tool's binary) to show read-only, at the same path


@dataclass(frozen=True)
class RunResult:
    """How a run ended; JSON-safe so a runner job can hand it to the trusted side.

    `exit_code`/`signal` are what the launcher observed of the script's process (not anything the
    script printed). `uncaught_exception` is the bootstrap's report of the exception that ended the
    script ({"type": "module.Name", "message", "frames": [[file, line, function]...], "cause",
    "context", "suppress_context"}), kept only when the run did not exit 0: a script that targets the
    channel can claim an exception it never raised, but cannot make a clean exit look failed."""
    exit_code: int | None
    signal: str | None  # "SIGSEGV" etc. when the script died of a signal we did not send
    duration_s: float
    peak_rss_bytes: int | None
    stdout: str
    stderr: str
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    limits_fired: tuple[str, ...] = ()  # timeout, cpu_time, address_space, file_size, processes, memory, output
    network_isolated: bool = False
    network_note: str = ""
    workdir: str | None = None
    env_used: dict = field(default_factory=dict)
    warm: bool = False  # run by the warm worker (runners/worker.py) rather than a fresh interpreter
    uncaught_exception: dict | None = None
    probe: dict | None = None  # the in-run torch probe's measurements (runners/_torch_probe.py), when asked
    sandbox: str = ""  # e.g. "bubblewrap 0.8.0, uid 65534, seccomp" or "none (unsafe): ..."
    limits_mechanism: str = ""  # "rlimit" (per process) or "cgroup v2" (whole run) + rlimits
    cleanup_error: str = ""  # why the workdir could not be removed, if it could not

    @property
    def status(self) -> str:
        """ok | failed | crashed | timeout | limit"""
        if "timeout" in self.limits_fired:
            return "timeout"
        if self.limits_fired:
            return "limit"
        if self.signal:
            return "crashed"
        return "ok" if self.exit_code == 0 else "failed"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["limits_fired"] = list(self.limits_fired)
        data["status"] = self.status
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> "RunResult":
        known = cls.__dataclass_fields__
        values = {k: v for k, v in data.items() if k in known}
        values["limits_fired"] = tuple(values.get("limits_fired", ()))
        return cls(**values)


# --- environment -------------------------------------------------------------------------------
def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def build_env(extra: Mapping[str, str], workdir: Path | str, parent: Mapping[str, str] = os.environ,
              cache_dir: str | None = None, home: str | None = None, tmpdir: str | None = None) -> dict[str, str]:
    """The child's whole environment, with paths as the child sees them (`workdir`, `cache_dir`,
    `home`, `tmpdir`; home defaults to the workdir and tmpdir to workdir/tmp, as in unsafe mode).
    Raises ValueError if `extra` names a credential (a caller bug)."""
    refused = sorted(name for name in extra if is_secret_name(name))
    if refused:
        raise ValueError(f"refusing to pass secret-looking variables into the sandbox: {', '.join(refused)}")
    workdir = Path(workdir)
    env = {
        "PATH": SAFE_PATH,
        "HOME": home or str(workdir),
        "TMPDIR": tmpdir or str(workdir / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(Path(cache_dir or workdir) / "inductor_cache"),
        "TRITON_CACHE_DIR": str(Path(cache_dir or workdir) / "triton_cache"),
    }
    env.update({name: parent[name] for name in PASS_THROUGH if name in parent and not is_secret_name(name)})
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


def sandbox_env(spec: RunSpec, parent: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of a bubblewrap run: every path is the one inside the sandbox."""
    return build_env(spec.env, INSIDE_WORKDIR, parent, cache_dir=INSIDE_CACHE if spec.cache_dir else None,
                     home=INSIDE_HOME, tmpdir="/tmp")


# --- bubblewrap ------------------------------------------------------------------------------------
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


# --- unsafe mode (no bubblewrap) ---------------------------------------------------------------------
_unsafe_fallback = False


def allow_unsafe_fallback(allowed: bool = True) -> None:
    """The CLI's `--unsafe-no-sandbox`: where bubblewrap is missing or broken, run with the weaker
    isolation below instead of refusing. Where bubblewrap works it is still used. Every RunResult's
    `sandbox` says which a run got."""
    global _unsafe_fallback
    _unsafe_fallback = allowed


def unsafe_fallback_needed() -> bool:
    """The fallback was allowed and bubblewrap cannot run here."""
    return _unsafe_fallback and not bubblewrap().ok


def effective(spec: RunSpec) -> RunSpec:
    """The spec as it will run: unsafe when the fallback is allowed and needed."""
    if not spec.unsafe_no_sandbox and unsafe_fallback_needed():
        return replace(spec, unsafe_no_sandbox=True)
    return spec


@lru_cache(maxsize=1)
def namespace_support() -> tuple[bool, str]:
    """Whether `unshare` can give us new network+PID namespaces here (unsafe mode); probed once."""
    binary = shutil.which("unshare")
    if binary is None:
        return False, "unshare(1) is not installed; the network was not isolated"
    try:
        probe = subprocess.run([binary, *UNSHARE_FLAGS, "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"unshare failed ({exc}); the network was not isolated"
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["unknown error"]
        return False, f"new namespaces are not permitted here ({reason[0]}); the network was not isolated"
    return True, "new network and PID namespaces: no network, not even loopback"


def isolation_for(requested: bool) -> tuple[bool, str]:
    return namespace_support() if requested else (False, "isolation not requested")


def unshare_prefix(isolated: bool) -> list[str]:
    return [shutil.which("unshare") or "unshare", *UNSHARE_FLAGS, "--"] if isolated else []


# --- workdir -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """A workdir ready for one run: the script and files written, the environment built."""
    workdir: Path
    env: dict
    owned: bool  # we created it, so we remove it (unless keep_workdir)
    sandboxed: bool = True  # bubblewrap (False: unsafe mode)
    inside_cwd: str = INSIDE_WORKDIR  # where the run starts, as it sees it

    def cleanup(self, spec: RunSpec) -> str:
        """Remove the workdir if it is ours; '' or why it could not be removed (never raises)."""
        if self.owned and not spec.keep_workdir:
            problem = safefs.remove_tree(self.workdir)
            if problem:
                log.warning("sandbox: %s", problem)
                return problem
        return ""

    def reported_workdir(self, spec: RunSpec) -> str | None:
        return str(self.workdir) if spec.keep_workdir or not self.owned else None


def _validate(spec: RunSpec) -> None:
    if (spec.argv is None) == (spec.script is None):
        raise ValueError("give exactly one of argv or script")
    build_env(spec.env, Path("/nonexistent"))  # refuses secrets before anything is created
    for name in list(spec.files) + ([spec.cwd] if spec.cwd else []):
        try:
            safefs._parts(name)
        except safefs.UnsafePath:
            raise ValueError(f"file {name!r} would be written outside the workdir") from None


def inside_inductor_tmp() -> str:
    """Inductor's default cache directory as the sandbox uid sees it: torch derives it at import from
    the temp dir and the user name (getpass, else uid_N), and keeps precompiled headers there."""
    try:
        name = pwd.getpwuid(SANDBOX_UID).pw_name
    except KeyError:
        name = f"uid_{SANDBOX_UID}"
    return f"/tmp/torchinductor_{name}"


def prepare_job_cache(cache: Path, owner: tuple[int, int] | None) -> None:
    """A job's cache dir with its `inductor_tmp`, handed to the sandbox uid (as root)."""
    cache.mkdir(parents=True, exist_ok=True)
    fd = safefs.open_dir(cache)
    try:
        if owner:
            os.fchown(fd, *owner)
        os.close(safefs.open_dir_beneath(fd, JOB_INDUCTOR_TMP, create=True))
        if owner:
            os.chown(JOB_INDUCTOR_TMP, *owner, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def prepare(spec: RunSpec, parent: str | None = None) -> Prepared:
    """Validate the spec (before touching the disk), then make and fill the workdir (in `parent` when
    given: the warm worker's runs directory). Files are written with O_NOFOLLOW|O_EXCL semantics, so a
    reused workdir's planted symlinks are replaced, not written through; as root the workdir and what
    we write are handed to the sandbox uid."""
    _validate(spec)
    sandboxed = not spec.unsafe_no_sandbox
    owner = None
    if sandboxed:
        uid, gid, drop = sandbox_owner()
        owner = (uid, gid) if drop else None
    owned = spec.workdir is None
    workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="pt2-sandbox-", dir=parent)).absolute()
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        root = safefs.open_dir(workdir)
        try:
            if owner:
                os.fchown(root, *owner)
            if not sandboxed:
                os.close(safefs.open_dir_beneath(root, "tmp", create=True))  # TMPDIR of unsafe runs
            if spec.script is not None:
                safefs.write_beneath(root, "repro.py", spec.script.encode("utf-8"), replace=True, owner=owner)
            for name, content in spec.files.items():
                safefs.write_beneath(root, name, content.encode("utf-8"), replace=True, owner=owner)
            inside_cwd = INSIDE_WORKDIR if sandboxed else str(workdir)
            if spec.cwd:
                os.close(safefs.open_dir_beneath(root, spec.cwd))  # a plain directory, inside
                inside_cwd = os.path.join(inside_cwd, *safefs._parts(spec.cwd))
        finally:
            os.close(root)
        if spec.cache_dir:
            prepare_job_cache(Path(spec.cache_dir), owner)
    except BaseException:
        if owned:
            safefs.remove_tree(workdir)
        raise
    env = sandbox_env(spec) if sandboxed else build_env(spec.env, workdir, cache_dir=spec.cache_dir)
    return Prepared(workdir, env, owned, sandboxed, inside_cwd)


# --- output ------------------------------------------------------------------------------------
class CappedReader(threading.Thread):
    """Drains one pipe, keeping the first quarter of `cap` bytes and a ring of the last three quarters.

    Memory stays under ~2x the cap however much the child writes; past the flood mark
    (64x the cap, at least 64 MiB) `on_flood` is called once so the caller can kill the run.
    """

    def __init__(self, fd: int, cap: int, on_flood: Callable[[], None]):
        super().__init__(daemon=True)
        self.fd, self.head_cap, self.tail_cap = fd, cap // 4, cap - cap // 4
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.on_flood, self.flood_at, self.flooded = on_flood, max(cap * OUTPUT_KILL_FACTOR, OUTPUT_KILL_MIN_BYTES), False

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self._keep(chunk)
        finally:
            os.close(self.fd)

    def _keep(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[:len(self.tail) - self.tail_cap]
        if self.total > self.flood_at and not self.flooded:
            self.flooded = True
            self.on_flood()

    def text(self) -> tuple[str, int]:
        """The kept output (with a marker line where bytes were dropped) and how many were dropped."""
        tail = self.tail[-self.tail_cap:] if len(self.tail) > self.tail_cap else self.tail
        dropped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
        return (bytes(self.head) + marker + bytes(tail)).decode("utf-8", errors="replace"), dropped


def start_readers(fds: tuple[int, int], cap: int, on_flood: Callable[[], None]) -> tuple[CappedReader, CappedReader]:
    readers = (CappedReader(fds[0], cap, on_flood), CappedReader(fds[1], cap, on_flood))
    for reader in readers:
        reader.start()
    return readers


class EvidenceReader(threading.Thread):
    """Drains the bootstrap's evidence pipe, keeping at most MAX_EVIDENCE_READ bytes."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd = fd
        self.data = bytearray()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                room = MAX_EVIDENCE_READ - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.fd)


def start_evidence_reader(fd: int | None) -> EvidenceReader | None:
    if fd is None:
        return None
    reader = EvidenceReader(fd)
    reader.start()
    return reader


def _clean_exception(value, depth: int = 0) -> dict | None:
    """A claimed exception, reduced to the documented shape and sizes (anything else: None)."""
    if not isinstance(value, dict) or depth > 5:
        return None
    kind, message = value.get("type"), value.get("message")
    if not isinstance(kind, str) or not isinstance(message, str) or not kind:
        return None
    frames = []
    for frame in value.get("frames") or []:
        if (isinstance(frame, list) and len(frame) == 3 and isinstance(frame[0], str) and type(frame[1]) is int
                and isinstance(frame[2], str)):
            frames.append([frame[0][:500], frame[1], frame[2][:200]])
        if len(frames) >= 64:
            break
    return {"type": kind[:200], "message": message[:2000], "frames": frames,
            "cause": _clean_exception(value.get("cause"), depth + 1),
            "context": _clean_exception(value.get("context"), depth + 1),
            "suppress_context": value.get("suppress_context") is True}


MAX_PROBE_CALLS = 64


def parse_probe(data: bytes) -> dict | None:
    """The torch probe's report (a `{"probe": ...}` line), reduced to known keys and plain values.
    Kept whatever the exit status: a silent failure is a run that exited 0."""
    for line in reversed(bytes(data or b"").splitlines()):
        try:
            value = json.loads(line)
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("probe"), dict):
            probe = value["probe"]
            calls = [c for c in probe.get("calls") or [] if isinstance(c, dict)][:MAX_PROBE_CALLS]
            return {"calls": [{k: v for k, v in c.items() if isinstance(v, (int, float, bool, str)) and len(k) < 40}
                              for c in calls],
                    "counters": probe.get("counters") if isinstance(probe.get("counters"), dict) else None,
                    "errors": [str(e)[:300] for e in (probe.get("errors") or [])][:10]}
    return None


def parse_evidence(data: bytes, exit_code: int | None) -> dict | None:
    """The last well-formed exception report in `data`, or None; always None for a run that exited 0."""
    if exit_code == 0 or not data:
        return None
    for line in reversed(bytes(data).splitlines()):
        try:
            cleaned = _clean_exception(json.loads(line))
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        if cleaned is not None:
            return cleaned
    return None


# --- outcome -----------------------------------------------------------------------------------
def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decode_wait_status(status: int) -> tuple[int | None, str | None]:
    """(exit code, None) or (None, signal name)."""
    if os.WIFSIGNALED(status):
        return None, signal_name(os.WTERMSIG(status))
    return os.WEXITSTATUS(status), None


MEMORY_ERROR_MARKS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory",
                      "DefaultCPUAllocator: can't allocate memory", "failed to map segment")
PROCESS_LIMIT_MARKS = ("Resource temporarily unavailable", "can't start new thread", "fork: retry",
                       "pthread_create failed")


def limits_from_outcome(spec: RunSpec, exit_code: int | None, sig: str | None, stderr: str,
                        already: list[str]) -> list[str]:
    """Which rlimit stopped the run, read from how it ended: SIGXCPU means the CPU limit, SIGXFSZ or
    EFBIG the file size one; a failed run whose stderr ends in an allocation failure, with an address-space
    limit set, means that one; one ending in EAGAIN from fork or thread creation, the process limit."""
    found = []
    if sig == "SIGXCPU" and spec.cpu_time_s:
        found.append("cpu_time")
    failed = sig is not None or exit_code != 0
    tail = stderr[-4000:]
    # Python ignores SIGXFSZ, so there the write fails with EFBIG ("File too large") instead
    if spec.max_file_bytes and (sig == "SIGXFSZ" or (failed and "File too large" in tail)):
        found.append("file_size")
    if (spec.address_space_bytes and failed and "timeout" not in already
            and any(mark in tail for mark in MEMORY_ERROR_MARKS)):
        found.append("address_space")
    if (spec.max_processes and failed and "timeout" not in already and not spec.unsafe_no_sandbox
            and any(mark in tail for mark in PROCESS_LIMIT_MARKS)):
        found.append("processes")
    return found


def build_result(spec: RunSpec, prepared: Prepared, wait_status: int | None, peak_rss: int | None,
                 readers: tuple[CappedReader, CappedReader], limits: list[str], duration_s: float,
                 network: tuple[bool, str], warm: bool, evidence: EvidenceReader | None = None,
                 sandbox: str = "", limits_mechanism: str = "rlimit") -> RunResult:
    """One RunResult for cold and warm runs alike. A run we stopped reports no signal of its own."""
    (stdout, out_dropped), (stderr, err_dropped) = readers[0].text(), readers[1].text()
    exit_code, sig = decode_wait_status(wait_status) if wait_status is not None else (None, None)
    limits = limits + limits_from_outcome(spec, exit_code, sig, stderr, limits)
    if sig in OUR_KILLS and ("timeout" in limits or "output" in limits):
        sig = None
    return RunResult(
        exit_code=exit_code, signal=sig, duration_s=round(duration_s, 3), peak_rss_bytes=peak_rss,
        stdout=stdout, stderr=stderr, stdout_dropped_bytes=out_dropped, stderr_dropped_bytes=err_dropped,
        limits_fired=tuple(dict.fromkeys(limits)), network_isolated=network[0], network_note=network[1],
        workdir=prepared.reported_workdir(spec), env_used=dict(prepared.env), warm=warm,
        uncaught_exception=parse_evidence(evidence.data, exit_code) if evidence is not None else None,
        probe=parse_probe(evidence.data) if evidence is not None else None,
        sandbox=sandbox, limits_mechanism=limits_mechanism)


# --- processes ---------------------------------------------------------------------------------
def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_with_deadline(pid: int, deadline: float):
    """wait4(pid) until `deadline` (monotonic); (status, rusage) or None if still running.
    Sleeps on a pidfd where the kernel has them, so an exit is seen at once."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            reaped, status, usage = os.wait4(pid, os.WNOHANG)
            if reaped:
                return status, usage
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], remaining)
            else:
                time.sleep(min(remaining, 0.01))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def run(spec: RunSpec) -> RunResult:
    """Run `spec` to completion (or its limits) in a fresh interpreter and report what happened.
    Raises SandboxUnavailable when bubblewrap is missing or broken (unless spec.unsafe_no_sandbox, or
    the unsafe fallback was allowed)."""
    spec = effective(spec)
    _validate(spec)
    if not spec.unsafe_no_sandbox:
        require_bubblewrap()
    prepared = prepare(spec)
    try:
        result = _execute(spec, prepared)
    except BaseException:
        prepared.cleanup(spec)
        raise
    problem = prepared.cleanup(spec)
    if problem:
        result = RunResult.from_dict({**result.to_dict(), "cleanup_error": problem})
    return result


def script_target(spec: RunSpec, evidence_fd: int, sandboxed: bool) -> list[str]:
    """The target argv: the command, or the interpreter running our bootstrap on repro.py."""
    if spec.argv is not None:
        return list(spec.argv)
    bootstrap = f"{INSIDE_RUNNER}/_bootstrap.py" if sandboxed else str(BOOTSTRAP)
    return [spec.python, bootstrap, str(evidence_fd), "repro.py"]


def launcher_config(spec: RunSpec, status_fd: int, evidence_fd: int, sandboxed: bool) -> list[str]:
    """_launcher.py's KEY=VALUE arguments."""
    config = {"status_fd": status_fd, "evidence_fd": evidence_fd, "cpu_s": spec.cpu_time_s or 0,
              "as_bytes": spec.address_space_bytes or 0, "fsize_bytes": spec.max_file_bytes or 0,
              # unsafe mode has no user namespace of its own: RLIMIT_NPROC would count every process of our uid
              "nproc": (spec.max_processes or 0) if sandboxed else 0, "term_handler": int(not sandboxed)}
    return [f"{key}={int(value)}" for key, value in config.items()]


def bwrap_command(inner: list[str], *, python: str, writable: list[tuple[str, str]], chdir: str, seccomp_fd: int,
                  tmp_bytes: int, strict: bool = True, gpu: bool = False, share_net: bool = False,
                  runner_files: tuple[str, ...] = ("_launcher.py", "_bootstrap.py", "_torch_probe.py"), scratch: tuple[str, ...] = (),
                  cgroup_procs: str | None = None, read_only: tuple[str, ...] = (),
                  die_with_parent: bool = True, env: Mapping[str, str] | None = None) -> tuple[list[str], dict]:
    """bwrap argv (and Popen kwargs) running `inner` in a sandbox: the system read-only, the
    interpreter's directories read-only, our `runner_files` under /.pt2, `writable` (host path,
    inside path) read-write, / and /dev read-only, `scratch` small private tmpfs (the warm server's:
    torch makes its cache directory at import, and its children mount each run there).
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
    tail = [arg for path in scratch for arg in ("--size", str(1 << 20), "--tmpfs", path)]
    # / (bubblewrap's tmpfs) and /dev stay read-only: neither is size-capped, and both are RAM
    tail += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", chdir, "--seccomp", str(seccomp_fd)]
    if strict:
        tail.append("--disable-userns")
    tail += ["--", *inner]
    return binds.command(found.path, head, tail, cgroup_procs)


def sandbox_command(spec: RunSpec, prepared: Prepared, inner: list[str], seccomp_fd: int,
                    cgroup_procs: str | None = None) -> tuple[list[str], dict]:
    """bwrap argv (and Popen kwargs) running `inner` in the sandbox `spec` and `prepared` describe."""
    writable = [(str(prepared.workdir), INSIDE_WORKDIR)]
    if spec.cache_dir:
        writable += [(spec.cache_dir, INSIDE_CACHE),
                     (os.path.join(spec.cache_dir, JOB_INDUCTOR_TMP), inside_inductor_tmp())]
    return bwrap_command(inner, python=spec.python, writable=writable, chdir=prepared.inside_cwd,
                         seccomp_fd=seccomp_fd, tmp_bytes=spec.tmp_bytes, gpu=spec.gpu,
                         share_net=not spec.isolate_network, cgroup_procs=cgroup_procs,
                         read_only=spec.extra_ro_paths, env=prepared.env)


def sandbox_description(sandboxed: bool) -> str:
    if not sandboxed:
        isolated, note = namespace_support()
        return f"none (unsafe): {note}" if isolated else "none (unsafe): no namespaces"
    uid, _, drop = sandbox_owner()
    who = f"uid {uid} outside" if drop else f"the caller's uid {uid} outside"
    return f"bubblewrap {bubblewrap().version}: uid {SANDBOX_UID} inside, {who}, seccomp, no capabilities"


def _execute(spec: RunSpec, prepared: Prepared) -> RunResult:
    limits: list[str] = []
    sandboxed = prepared.sandboxed
    started = time.monotonic()
    status_r, status_w = os.pipe()
    evidence_r, evidence_w = os.pipe() if spec.script is not None else (None, -1)
    passed = [status_w] + ([evidence_w] if evidence_w >= 0 else [])
    config = launcher_config(spec, status_w, evidence_w, sandboxed)
    target = script_target(spec, evidence_w, sandboxed)
    cgroup = cgroups.RunCgroup.create(spec) if sandboxed else None
    seccomp_fd = None
    try:
        if sandboxed:
            seccomp_fd = _pipe_with(seccomp.build_filter("strict"))
            passed.append(seccomp_fd)
            inner = [spec.python, "-I", "-S", f"{INSIDE_RUNNER}/_launcher.py", *config, "--", *target]
            argv, kwargs = sandbox_command(spec, prepared, inner, seccomp_fd,
                                           cgroup_procs=cgroup.procs_file if cgroup else None)
            network = (True, "bubblewrap: a network namespace of its own, no network, not even loopback") \
                if spec.isolate_network else (False, "the host's network (isolate_network=False)")
            cwd = "/"
        else:
            network = isolation_for(spec.isolate_network)
            argv = unshare_prefix(network[0]) + [sys.executable, "-I", "-S", str(LAUNCHER), *config, "--", *target]
            kwargs, cwd = {}, prepared.inside_cwd
        proc = subprocess.Popen(argv, cwd=cwd, env=prepared.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, pass_fds=tuple(passed), **kwargs)
    except BaseException:
        for fd in (status_r, evidence_r):
            if fd is not None:
                os.close(fd)
        if cgroup:
            cgroup.remove()
        raise
    finally:
        for fd in passed:
            os.close(fd)

    def flood() -> None:
        limits.append("output")
        signal_group(proc.pid, signal.SIGKILL)

    readers = start_readers((os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())), spec.output_cap_bytes, flood)
    evidence = start_evidence_reader(evidence_r)
    proc.stdout.close()
    proc.stderr.close()
    status, usage = _wait(proc, spec.timeout_s, limits, grace_s=0 if sandboxed else TERM_GRACE_S)
    signal_group(proc.pid, signal.SIGKILL)  # anything the script left behind in its group
    reported = _read_status(status_r)
    if reported is not None:  # the target's own ending, not the launcher's
        status, peak_rss = reported["wait_status"], reported["maxrss_kb"] * 1024
    else:
        peak_rss = usage.ru_maxrss * 1024 if usage else None
    for reader in readers:
        reader.join(timeout=10)
    if evidence is not None:
        evidence.join(timeout=10)
    mechanism = "rlimit"
    if cgroup:
        limits += cgroup.limits_fired()
        peak_rss = cgroup.peak_memory() or peak_rss
        cgroup.remove()
        mechanism = f"cgroup v2 ({cgroup.controls()}) + rlimit"
    result = build_result(spec, prepared, status, peak_rss, readers, limits, time.monotonic() - started,
                          network, warm=False, evidence=evidence, sandbox=sandbox_description(sandboxed),
                          limits_mechanism=mechanism)
    if sandboxed and reported is None and not limits and result.stderr.startswith(("bwrap:", "sandbox stage:")):
        raise SandboxUnavailable(f"the sandbox did not start: {result.stderr.strip().splitlines()[0]}; {BWRAP_FIX}")
    return result


def _read_status(read_fd: int) -> dict | None:
    """The launcher's report on the target (wait status, peak RSS), or None if it was killed first."""
    chunks = []
    try:
        while chunk := os.read(read_fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    try:
        wait_status, maxrss_kb = (int(field) for field in b"".join(chunks).split())
    except ValueError:
        return None
    return {"wait_status": wait_status, "maxrss_kb": maxrss_kb}


def _wait(proc: subprocess.Popen, timeout_s: float, limits: list[str], grace_s: float = TERM_GRACE_S):
    """Reap the sandbox; on timeout kill it (unsafe mode: SIGTERM first, so the launcher kills and
    reaps the target and reports, then SIGKILL after the grace period)."""
    done = wait_with_deadline(proc.pid, time.monotonic() + timeout_s)
    if done is None:
        limits.append("timeout")
        if grace_s > 0:
            signal_group(proc.pid, signal.SIGTERM)
            done = wait_with_deadline(proc.pid, time.monotonic() + grace_s)
        if done is None:
            signal_group(proc.pid, signal.SIGKILL)
            done = os.wait4(proc.pid, 0)[1:]
    proc.returncode = -1  # reaped here; keep Popen from waiting again
    return done
