"""The environment of a run, built from scratch: a repro never inherits ours, and a variable whose
name looks like a credential is refused outright, so a token cannot reach a repro even by mistake.
"""
from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Mapping

from .run_records import INDUCTOR_CACHE, INSIDE_CACHE, INSIDE_HOME, INSIDE_WORKDIR, RunSpec

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Hardware and toolchain variables a repro may need; never caches (those go in the workdir).
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
                "CC", "CXX", "OMP_NUM_THREADS", "TZ", "CUDA_HOME", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
SECRET_PATTERNS = ("*TOKEN*", "*SECRET*", "*_KEY", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "GITHUB_*",
                   "ACTIONS_*", "RUNNER_*", "AWS_*", "PT2_TRIAGE_*", "SSH_AUTH_SOCK")


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
        # Inductor compiles in the run's own process: a repro has a handful of kernels, and starting
        # its pool of compile subprocesses (one per core) cost more than it saved. Measured on an
        # H200 host (16 cores), a cold run of a one-kernel repro: 26 s with the pool, 16 s without.
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(Path(cache_dir or workdir) / INDUCTOR_CACHE),
        "TRITON_CACHE_DIR": str(Path(cache_dir or workdir) / "triton_cache"),
    }
    env.update({name: parent[name] for name in PASS_THROUGH if name in parent and not is_secret_name(name)})
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


def sandbox_env(spec: RunSpec, parent: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of a bubblewrap run: every path is the one inside the sandbox."""
    return build_env(spec.env, INSIDE_WORKDIR, parent, cache_dir=INSIDE_CACHE if spec.cache_dir else None,
                     home=INSIDE_HOME, tmpdir="/tmp")
