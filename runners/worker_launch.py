"""How a warm worker's fork-server is started: its argv, environment and sandbox, and the isolation
its runs will get.

Kept apart from `worker.py` (which owns the server's life and the runs it serves) because this is
the part that must match a cold run's sandbox: it builds on the same `bwrap_command`, and it binds
every file the server imports under /.pt2, beside `_worker_server.py` (whose directory is on the
server's sys.path), or the server could not start inside the sandbox.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from . import inductor_seed, sandbox, seccomp

SERVER = Path(__file__).with_name("_worker_server.py")
# Everything the server imports of ours, shown read-only beside it (its imports are plain `import _x`).
SERVER_FILES = ("_worker_server.py", "_worker_preload.py", "_worker_isolation.py", "_worker_target.py",
                "_worker_reaper.py", "_bootstrap.py", "_torch_probe.py")
# Read by its preload when present (the modules to import after torch): without it the server starts
# all the same, and runs import those modules themselves.
OPTIONAL_SERVER_FILES = ("_warm_imports.txt",)
INSIDE_RUNS = "/pt2w/runs"
INSIDE_CACHES = "/pt2w/caches"
SERVER_TMP_BYTES = 64 << 20
SERVER_SCRATCH_BYTES = 1 << 20  # the server's own workdir and cache, besides the ISA probes it copies in


@dataclass(frozen=True)
class ServerLaunch:
    """What `subprocess.Popen` needs to start the server, and what every run of it will report as
    its network isolation and sandbox."""
    argv: list[str]
    popen_kwargs: dict
    env: dict
    passed_fds: list[int]  # the control socket, and in bwrap mode the seccomp program's pipe
    cwd: str
    network: tuple[bool, str]
    sandbox: str


def present(names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of our files beside the server that exist (bubblewrap refuses to bind a missing one)."""
    return tuple(name for name in names if SERVER.with_name(name).is_file())


def scratch_bytes(seed: Path | None) -> int:
    """Room for the server's scratch cache: its own needs plus twice the ISA probes its preload
    copies there. A fixed 1 MiB held this machine's 176 KiB of probes, but an H200 host's did not
    fit ("No space left on device"), and every run there went cold."""
    probes = sum(path.stat().st_size for path in seed.rglob("*") if path.is_file()) if seed else 0
    return SERVER_SCRATCH_BYTES + 2 * probes


def server_launch(*, python: str, preload: tuple[str, ...], ctrl_fd: int, home: Path, runs: Path, caches: Path,
                  isolate_network: bool, unsafe_no_sandbox: bool) -> ServerLaunch:
    """The server's launch, in bubblewrap (or, in unsafe mode, under unshare(1)), seeing only `runs`
    and `caches` of ours. Raises SandboxUnavailable (or OSError, UnsupportedArchitecture)."""
    # the prebuilt ISA test libraries, read-only: the server's preload copies them into its own cache
    seed = inductor_seed.seed_dir(python) if "torch" in preload else None
    seeds = {"seed": os.path.realpath(seed)} if seed else {}
    if unsafe_no_sandbox:
        network = sandbox.isolation_for(isolate_network)
        config = {"mode": "unsafe", **seeds}
        argv = sandbox.unshare_prefix(network[0]) + [python, str(SERVER), str(ctrl_fd), json.dumps(config), *preload]
        return ServerLaunch(argv, {}, sandbox.build_env({}, home), [ctrl_fd], str(home), network,
                            sandbox.sandbox_description(False))
    sandbox.require_bubblewrap()
    uid, gid, drop = sandbox.sandbox_owner()
    if drop:
        for path in (runs, caches):
            os.chown(path, uid, gid)
    config = {"mode": "bwrap", "seccomp": seccomp.build_filter("strict").hex(), "runs": INSIDE_RUNS,
              "caches": INSIDE_CACHES, "workdir": sandbox.INSIDE_WORKDIR, "cache": sandbox.INSIDE_CACHE,
              "home": sandbox.INSIDE_HOME, "inductor_tmp": sandbox.inside_inductor_tmp(),
              "tmp_keep": [d for d in sandbox.interpreter_dirs(python) if d.startswith("/tmp/")], **seeds}
    seccomp_fd = sandbox._pipe_with(seccomp.build_filter("server"))
    inner = [python, f"{sandbox.INSIDE_RUNNER}/_worker_server.py", str(ctrl_fd), json.dumps(config), *preload]
    env = sandbox.build_env({}, sandbox.INSIDE_WORKDIR, home=sandbox.INSIDE_HOME, tmpdir="/tmp")
    argv, kwargs = sandbox.bwrap_command(
        inner, python=python, writable=[(str(runs), INSIDE_RUNS), (str(caches), INSIDE_CACHES)],
        chdir="/", seccomp_fd=seccomp_fd, tmp_bytes=SERVER_TMP_BYTES, strict=False,
        share_net=not isolate_network, runner_files=SERVER_FILES + present(OPTIONAL_SERVER_FILES),
        scratch=(sandbox.INSIDE_WORKDIR, sandbox.INSIDE_CACHE), scratch_bytes=scratch_bytes(seed),
        die_with_parent=False, env=env,
        read_only=tuple(seeds.values()))
    network = (True, "bubblewrap, and a network namespace of its own per run: no network, not even loopback") \
        if isolate_network else (False, "the host's network (isolate_network=False)")
    return ServerLaunch(argv, kwargs, env, [ctrl_fd, seccomp_fd], "/", network,
                        sandbox.sandbox_description(True) + ", namespaces of its own per run")
