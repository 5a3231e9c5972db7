"""How a run ended, as one `RunResult` for cold and warm runs alike: the wait status the launcher
saw, which limit stopped the run (read from how it ended, since an rlimit leaves no other trace),
and the evidence the bootstrap reported.
"""
from __future__ import annotations

import os
import signal

from .run_output import CappedReader, EvidenceReader, parse_evidence, parse_probe
from .run_records import RunResult, RunSpec
from .run_workdir import Prepared

OUR_KILLS = ("SIGKILL", "SIGTERM")  # how a run we stopped (timeout, output flood, disk) ends
OUR_KILL_LIMITS = ("timeout", "output", "disk")  # the limits we enforce by killing the run


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
    if sig in OUR_KILLS and any(limit in limits for limit in OUR_KILL_LIMITS):
        sig = None
    return RunResult(
        exit_code=exit_code, signal=sig, duration_s=round(duration_s, 3), peak_rss_bytes=peak_rss,
        stdout=stdout, stderr=stderr, stdout_dropped_bytes=out_dropped, stderr_dropped_bytes=err_dropped,
        limits_fired=tuple(dict.fromkeys(limits)), network_isolated=network[0], network_note=network[1],
        workdir=prepared.reported_workdir(spec), env_used=dict(prepared.env), warm=warm,
        uncaught_exception=parse_evidence(evidence.data, exit_code) if evidence is not None else None,
        probe=parse_probe(evidence.data) if evidence is not None else None,
        sandbox=sandbox, limits_mechanism=limits_mechanism)
