"""A run's workdir: validated before anything touches the disk, then made and filled without
following anything a previous run planted there, and removed after (`safefs`).

As root the workdir, what we write into it and the job's compile cache are handed to the sandbox
uid, which is the only one the run has.
"""
from __future__ import annotations

import logging
import os
import pwd
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import inductor_seed, safefs
from .bwrap import sandbox_owner
from .run_env import build_env, sandbox_env
from .run_records import INDUCTOR_CACHE, INSIDE_WORKDIR, JOB_INDUCTOR_TMP, SANDBOX_UID, RunSpec

log = logging.getLogger(__name__)


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
    """A job's cache dir with its `inductor_tmp`, handed to the sandbox uid (as root). The job's
    earlier runs wrote there: an `inductor_tmp` that is not a plain directory (a link, a file) is
    theirs to lose, and is replaced by one, never followed (it made every later run of the job raise)."""
    cache.mkdir(parents=True, exist_ok=True)
    fd = safefs.open_dir(cache)
    try:
        if owner:
            os.fchown(fd, *owner)
        try:
            os.close(safefs.open_dir_beneath(fd, JOB_INDUCTOR_TMP, create=True))
        except safefs.UnsafePath:
            os.unlink(JOB_INDUCTOR_TMP, dir_fd=fd)  # not a directory: unlinking removes the link, not its target
            os.close(safefs.open_dir_beneath(fd, JOB_INDUCTOR_TMP, create=True))
        if owner:
            os.chown(JOB_INDUCTOR_TMP, *owner, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def plant_isa_probes(spec: RunSpec, workdir: Path, owner: tuple[int, int] | None) -> None:
    """Copy the prebuilt ISA test libraries into the run's Inductor cache (runners/inductor_seed.py):
    a fresh interpreter asks Inductor's ISA questions again, and its first CPU kernel then need not
    wait for g++ to build them. A GPU run does not wait for the first build (inductor_seed)."""
    files = inductor_seed.seed_files(spec.python, wait=not spec.gpu)
    if not files:
        return
    fd = safefs.open_dir(spec.cache_dir or workdir)
    try:
        inductor_seed.plant(fd, INDUCTOR_CACHE, files, owner)
    except safefs.UnsafePath as exc:  # an earlier run of the job left a link on the way: no seed, the run builds its own
        log.info("sandbox: no ISA probes planted (%s)", exc)
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
        if parent is None and (spec.argv is not None or "torch" in (spec.script or "")):  # a cold run that may compile
            plant_isa_probes(spec, workdir, owner)
    except BaseException:
        if owned:
            safefs.remove_tree(workdir)
        raise
    env = sandbox_env(spec) if sandboxed else build_env(spec.env, workdir, cache_dir=spec.cache_dir)
    return Prepared(workdir, env, owned, sandboxed, inside_cwd)
