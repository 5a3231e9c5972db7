"""Inductor's probe of this machine's vector ISAs, built once and planted in every run's cache.

Before its first CPU kernel, every process asks which vector ISAs (avx512_vnni, avx512, avx2, ...)
the compiler can build for and the process can load: per ISA, g++ builds a test program against
torch's headers into Inductor's cache directory (unless the library is already there), then a
Python child dlopens it. A run's cache directory starts empty (its own, or its job's), so every
cold run paid the same g++ builds again: 8 s of a cold run's 15-20 s on 2 cores, and as much at
every warm server's start.

`seed_files(python)` builds those test libraries once per interpreter, torch install and compiler,
in a process that runs torch's probe and nothing else, and keeps them under
`~/.cache/pt2-triage/inductor-seed/<key>/` (`PT2_TRIAGE_SEED_DIR` moves it). No run ever writes
there: each run gets a copy in its own cache directory (`plant`), and may change only that copy.
The answer stays the run's own: it still dlopens each library, and a library that does not load
still rules its ISA out, as in a cache torch filled itself. If the build fails (no compiler, no
torch in that interpreter), runs simply build for themselves, as before.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from . import safefs
from .run_env import SAFE_PATH, build_env

log = logging.getLogger(__name__)

STORE_ENV = "PT2_TRIAGE_SEED_DIR"
BUILD_TIMEOUT_S = 300
COMPILERS = ("c++", "g++", "gcc", "clang++")  # what Inductor may pick on SAFE_PATH
BUILD = """\
from torch._inductor import cpu_vec_isa
print([str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()])
"""
SEED_SUFFIXES = (".cpp", ".so")
MAX_SEED_BYTES = 16 << 20

_lock = threading.Lock()
_known: dict[str, dict[str, bytes]] = {}  # key -> {relative path: content}; {} when the build failed
_building: set[str] = set()  # keys whose build a run that would not wait started in the background


def store_root() -> Path:
    given = os.environ.get(STORE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pt2-triage" / "inductor-seed"


def seed_key(python: str) -> str:
    """What the test libraries depend on: the interpreter, torch's install and version, the
    compilers on the sandbox's PATH, the machine. Computed without importing torch."""
    parts = [os.path.realpath(python), platform.machine()]
    torch_dir = _torch_dir(python)
    for path in [os.path.join(torch_dir, "version.py") if torch_dir else ""] + \
            [shutil.which(name, path=SAFE_PATH) or "" for name in COMPILERS] + [os.environ.get("CXX", "")]:
        parts.append(f"{path}:{_stamp(path)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def seed_files(python: str = sys.executable, wait: bool = True) -> dict[str, bytes]:
    """{path relative to Inductor's cache dir: content} of the prebuilt test libraries for `python`,
    building them first if this machine has none yet; {} if they cannot be built.

    `wait=False` (a GPU run: its kernels are Triton's, and a CPU kernel among them is rare) does not
    wait for a first build: it starts one in the background for the runs after it and gets {} now.
    On a fresh H200 host that build held the first GPU triage about 40 s before its first run."""
    key = seed_key(python)
    with _lock:
        if key not in _known:
            target = store_root() / key
            if not wait and not target.is_dir():
                _build_in_background(python, key, target)
                return {}
            _known[key] = _load_or_build(python, target)
        return _known[key]


def _build_in_background(python: str, key: str, target: Path) -> None:
    """Build the store for `key` in a daemon thread, once per process (callers hold `_lock`). A
    caller that waits meanwhile blocks on the store's file lock until it is done, then reads it."""
    if key in _building:
        return
    _building.add(key)

    def build() -> None:
        files = _load_or_build(python, target)
        with _lock:
            _known.setdefault(key, files)

    threading.Thread(target=build, name=f"inductor-seed-{key}", daemon=True).start()


def seed_dir(python: str = sys.executable) -> Path | None:
    """The store's directory for `python` (read-only to everyone but this module), if it has seeds."""
    return store_root() / seed_key(python) if seed_files(python) else None


def plant(root_fd: int, relative_dir: str, files: dict[str, bytes], owner: tuple[int, int] | None) -> None:
    """Write `files` under `relative_dir` of the directory `root_fd` (a run's workdir or job cache),
    skipping those already there; never through a link (safefs)."""
    for name, content in files.items():
        try:
            safefs.write_beneath(root_fd, f"{relative_dir}/{name}", content, owner=owner)
        except FileExistsError:
            continue


def _load_or_build(python: str, target: Path) -> dict[str, bytes]:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f".{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same key
            if not target.is_dir():
                _build(python, target)
        return _read(target)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.info("no prebuilt Inductor ISA probes (%s); runs build their own", exc)
        return {}


def _build(python: str, target: Path) -> None:
    """Run torch's ISA probe alone with a fresh cache dir, then keep the libraries it built."""
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        (work / "tmp").mkdir()
        env = build_env({}, work)  # a run's environment: its Inductor cache is work/inductor_cache
        cache = Path(env["TORCHINDUCTOR_CACHE_DIR"])
        done = subprocess.run([python, "-I", "-c", BUILD], env=env, cwd=work, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise ValueError(f"the probe failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
        kept = work / "seed"
        for path in sorted(cache.glob("*/*")):
            if path.suffix in SEED_SUFFIXES and path.is_file() and not path.is_symlink():
                (kept / path.parent.name).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, kept / path.parent.name / path.name)
        if not any(kept.glob("*/*.so")):
            raise ValueError(f"the probe built no library (it found {done.stdout.strip()})")
        os.rename(kept, target)  # whole or not at all
    finally:
        safefs.remove_tree(str(work))


def _read(target: Path) -> dict[str, bytes]:
    files, total = {}, 0
    for path in sorted(target.glob("*/*")):
        if path.suffix in SEED_SUFFIXES and path.is_file() and not path.is_symlink():
            files[f"{path.parent.name}/{path.name}"] = content = path.read_bytes()
            total += len(content)
    if total > MAX_SEED_BYTES:
        raise ValueError(f"{target} holds {total} bytes, more than any ISA probe builds")
    return files


def _torch_dir(python: str) -> str:
    """torch's package directory for `python`, found without importing torch: for our own
    interpreter from its import system, else from that interpreter's site-packages."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import importlib.util
        spec = importlib.util.find_spec("torch")
        return os.path.dirname(spec.origin) if spec and spec.origin else ""
    for prefix in dict.fromkeys((Path(python).parent.parent, Path(python).resolve().parent.parent)):
        for candidate in prefix.glob("lib/python3*/site-packages/torch"):
            return str(candidate)
    return ""


def _stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "-"
    return f"{info.st_size}:{info.st_mtime_ns}"
