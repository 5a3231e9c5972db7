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

The pieces live in sibling modules, one concern each: `run_records` (RunSpec, RunResult), `run_env`
(the environment), `bwrap` (bubblewrap and its argv), `run_workdir`, `run_output` (capped output and
evidence), `run_outcome` (how a run ended) and `unsafe_mode`. This module starts and waits for cold
runs, and every name callers used from it is still importable from here.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from . import bwrap, cgroups, seccomp
from .bwrap import (BWRAP_FIX, GPU_DEVICES, RUNNERS, Bubblewrap, _pipe_with, bubblewrap, bwrap_command,
                    interpreter_dirs, reachable_by, require_bubblewrap, sandbox_owner)
from .disk_watch import watch_run
from .run_env import build_env
from .run_output import parse_evidence, start_evidence_reader, start_readers
from .run_outcome import build_result
from .run_records import (INSIDE_CACHE, INSIDE_HOME, INSIDE_RUNNER, INSIDE_WORKDIR, JOB_INDUCTOR_TMP, SANDBOX_UID,
                          MiB, RunResult, RunSpec, SandboxUnavailable)
from .run_workdir import Prepared, _validate, inside_inductor_tmp, prepare, prepare_job_cache
from .unsafe_mode import (allow_unsafe_fallback, effective, isolation_for, namespace_support, unsafe_fallback_needed,
                          unshare_prefix)

TERM_GRACE_S = 1.0  # unsafe mode: between SIGTERM and SIGKILL on timeout, time for the launcher to clean up
LAUNCHER = RUNNERS / "_launcher.py"
BOOTSTRAP = RUNNERS / "_bootstrap.py"


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


def sandbox_command(spec: RunSpec, prepared: Prepared, inner: list[str], seccomp_fd: int,
                    cgroup_procs: str | None = None) -> tuple[list[str], dict]:
    """bwrap argv (and Popen kwargs) running `inner` in the sandbox `spec` and `prepared` describe."""
    writable = [(str(prepared.workdir), INSIDE_WORKDIR)]
    symlinks = []
    if spec.cache_dir:
        writable.append((spec.cache_dir, INSIDE_CACHE))
        # Inductor's default dir reaches the job's `inductor_tmp` through a link resolved inside the
        # sandbox, never a bind of a host path: the runs sharing the cache can write there, and one
        # could swap `inductor_tmp` for a symlink between our check and bubblewrap's mount
        symlinks.append((f"{INSIDE_CACHE}/{JOB_INDUCTOR_TMP}", inside_inductor_tmp()))
    return bwrap_command(inner, python=spec.python, writable=writable, symlinks=symlinks, chdir=prepared.inside_cwd,
                         seccomp_fd=seccomp_fd, tmp_bytes=spec.tmp_bytes, gpu=spec.gpu,
                         share_net=not spec.isolate_network, cgroup_procs=cgroup_procs,
                         read_only=spec.extra_ro_paths, env=prepared.env)


def sandbox_description(sandboxed: bool) -> str:
    if not sandboxed:
        isolated, note = namespace_support()
        return f"none (unsafe): {note}" if isolated else "none (unsafe): no namespaces"
    uid, _, drop = sandbox_owner()
    who = f"uid {uid} outside" if drop else f"the caller's uid {uid} outside"
    return f"bubblewrap {bwrap.bubblewrap().version}: uid {SANDBOX_UID} inside, {who}, seccomp, no capabilities"


@dataclass(frozen=True)
class StartedRun:
    """A cold run's sandbox, started: its process, the pipes its ending is read from, and what
    isolates it (kept together so `_execute` can wait for it and take it apart)."""
    proc: subprocess.Popen
    status_fd: int  # the launcher's report on the target
    evidence_fd: int | None  # the bootstrap's evidence pipe (script runs only)
    cgroup: cgroups.RunCgroup | None
    network: tuple[bool, str]


def launch_command(spec: RunSpec, prepared: Prepared, launcher_args: list[str], seccomp_fd: int | None,
                   cgroup: cgroups.RunCgroup | None) -> tuple[list[str], dict, str, tuple[bool, str]]:
    """(argv, Popen kwargs, cwd, network isolation) starting our launcher with `launcher_args`
    (its config, `--`, the target): in bubblewrap, or under unshare(1) in unsafe mode."""
    if prepared.sandboxed:
        inner = [spec.python, "-I", "-S", f"{INSIDE_RUNNER}/_launcher.py", *launcher_args]
        argv, kwargs = sandbox_command(spec, prepared, inner, seccomp_fd,
                                       cgroup_procs=cgroup.procs_file if cgroup else None)
        network = (True, "bubblewrap: a network namespace of its own, no network, not even loopback") \
            if spec.isolate_network else (False, "the host's network (isolate_network=False)")
        return argv, kwargs, "/", network
    network = isolation_for(spec.isolate_network)
    argv = unshare_prefix(network[0]) + [sys.executable, "-I", "-S", str(LAUNCHER), *launcher_args]
    return argv, {}, prepared.inside_cwd, network


def _start(spec: RunSpec, prepared: Prepared) -> StartedRun:
    """Start the launcher with its status and evidence pipes. If it cannot start, our read ends and
    the run's cgroup are released before the error propagates; the write ends are always closed
    here, so the pipes reach EOF when the run ends."""
    sandboxed = prepared.sandboxed
    status_r, status_w = os.pipe()
    evidence_r, evidence_w = os.pipe() if spec.script is not None else (None, -1)
    passed = [status_w] + ([evidence_w] if evidence_w >= 0 else [])
    launcher_args = [*launcher_config(spec, status_w, evidence_w, sandboxed), "--",
                     *script_target(spec, evidence_w, sandboxed)]
    cgroup = cgroups.RunCgroup.create(spec) if sandboxed else None
    try:
        seccomp_fd = None
        if sandboxed:
            seccomp_fd = _pipe_with(seccomp.build_filter("strict"))
            passed.append(seccomp_fd)
        argv, kwargs, cwd, network = launch_command(spec, prepared, launcher_args, seccomp_fd, cgroup)
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
    return StartedRun(proc, status_r, evidence_r, cgroup, network)


def _execute(spec: RunSpec, prepared: Prepared) -> RunResult:
    limits: list[str] = []
    started = time.monotonic()
    started_run = _start(spec, prepared)
    proc = started_run.proc

    def flood() -> None:
        limits.append("output")
        signal_group(proc.pid, signal.SIGKILL)

    def disk_taken() -> None:
        limits.append("disk")
        signal_group(proc.pid, signal.SIGKILL)

    readers = start_readers((os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())), spec.output_cap_bytes, flood)
    evidence = start_evidence_reader(started_run.evidence_fd)
    proc.stdout.close()
    proc.stderr.close()
    with watch_run((str(prepared.workdir), spec.cache_dir), spec.max_disk_bytes, disk_taken,
                   max_files=spec.max_disk_files, job_cache=spec.cache_dir):
        status, usage = _wait(proc, spec.timeout_s, limits, grace_s=0 if prepared.sandboxed else TERM_GRACE_S)
    signal_group(proc.pid, signal.SIGKILL)  # anything the script left behind in its group
    reported = _read_status(started_run.status_fd)
    if reported is not None:  # the target's own ending, not the launcher's
        status, peak_rss = reported["wait_status"], reported["maxrss_kb"] * 1024
    else:
        peak_rss = usage.ru_maxrss * 1024 if usage else None
    for reader in readers:
        reader.join(timeout=10)
    if evidence is not None:
        evidence.join(timeout=10)
    peak_rss, mechanism = _close_cgroup(started_run.cgroup, limits, peak_rss)
    result = build_result(spec, prepared, status, peak_rss, readers, limits, time.monotonic() - started,
                          started_run.network, warm=False, evidence=evidence,
                          sandbox=sandbox_description(prepared.sandboxed), limits_mechanism=mechanism)
    if (prepared.sandboxed and reported is None and not limits
            and result.stderr.startswith(("bwrap:", "sandbox stage:"))):
        raise SandboxUnavailable(f"the sandbox did not start: {result.stderr.strip().splitlines()[0]}; {BWRAP_FIX}")
    return result


def _close_cgroup(cgroup: cgroups.RunCgroup | None, limits: list[str], peak_rss: int | None) -> tuple[int | None, str]:
    """(peak RSS, limits mechanism) once the run is over: the cgroup's limits that fired are added to
    `limits`, its peak memory (the whole run's) replaces the target's, and the cgroup is removed."""
    if not cgroup:
        return peak_rss, "rlimit"
    limits += cgroup.limits_fired()
    peak_rss = cgroup.peak_memory() or peak_rss
    cgroup.remove()
    return peak_rss, f"cgroup v2 ({cgroup.controls()}) + rlimit"


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


# Names callers import from here; they are defined in the sibling modules above.
__all__ = ["BWRAP_FIX", "GPU_DEVICES", "INSIDE_CACHE", "INSIDE_HOME", "INSIDE_RUNNER", "INSIDE_WORKDIR", "MiB",
           "SANDBOX_UID", "TERM_GRACE_S", "Bubblewrap", "Prepared", "RunResult", "RunSpec", "SandboxUnavailable",
           "allow_unsafe_fallback", "bubblewrap", "build_env", "build_result", "bwrap_command", "effective",
           "inside_inductor_tmp", "interpreter_dirs", "isolation_for", "parse_evidence", "prepare", "prepare_job_cache",
           "reachable_by", "require_bubblewrap", "run", "sandbox_command", "sandbox_description", "sandbox_owner",
           "signal_group", "start_evidence_reader", "start_readers", "unsafe_fallback_needed", "unshare_prefix",
           "wait_with_deadline"]
