"""`pt2-triage doctor`: can this machine run triage jobs? Verdicts from facts, and what to do.

The facts come from `runners.doctor_probe.runner_facts` (I/O); everything here is a pure function
of them, so each verdict is tested with plain dicts. A failed check means jobs on this runner
would be wrong or unsafe (no torch, no compiler for Inductor CPU, no network isolation for
untrusted repros, a GPU runner without a GPU); a warning means they work with less.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

GiB = 1 << 30
MIN_PYTHON = (3, 10)
DISK_FAIL_BYTES = 5 * GiB  # Inductor/Triton caches and debug artifacts of one job fit in this
DISK_WARN_BYTES = 20 * GiB
DOCS = "runners/setup/README.md"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str  # what was found
    fix: str = ""  # what to do, when not ok

    def to_dict(self) -> dict:
        return asdict(self)


def check_python(facts: dict) -> Check:
    version = facts.get("python_version")
    if not version:
        return Check("python", "fail", f"the interpreter did not run: {facts.get('probe_error', 'no answer')}",
                     "give the runner's python with --python, or install python3 (>= 3.10)")
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    if parts < MIN_PYTHON:
        return Check("python", "fail", f"python {version}", "use python >= 3.10")
    return Check("python", "ok", f"python {version}")


def check_torch(facts: dict) -> Check:
    if facts.get("torch_version"):
        return Check("torch", "ok", f"torch {facts['torch_version']}"
                     + (f" (CUDA {facts['cuda_version']})" if facts.get("cuda_version") else " (CPU build)"))
    error = facts.get("torch_error") or facts.get("probe_error") or "not importable"
    return Check("torch", "fail", f"torch is not importable: {error}",
                 "pip install torch (CPU runners: --index-url https://download.pytorch.org/whl/cpu)")


def check_gpu(facts: dict, need_gpu: bool) -> Check:
    if facts.get("cuda_available"):
        return Check("cuda", "ok", f"CUDA visible: {facts.get('device_name') or 'a GPU'}")
    if not need_gpu:
        return Check("cuda", "ok", "no GPU visible (fine for a cpu runner)")
    if facts.get("torch_version") and not facts.get("cuda_version"):
        return Check("cuda", "fail", "torch is a CPU build", "install a CUDA build of torch on gpu runners")
    return Check("cuda", "fail", "torch.cuda.is_available() is False",
                 "check the driver (nvidia-smi) and that the container sees the GPU (--gpus all / NVIDIA device plugin)")


def check_triton(facts: dict, need_gpu: bool) -> Check:
    if facts.get("triton_version"):
        return Check("triton", "ok", f"triton {facts['triton_version']}")
    if need_gpu:
        return Check("triton", "fail", "triton is not importable", "pip install triton (CUDA builds of torch bring it)")
    return Check("triton", "ok", "not installed (only GPU kernels need it)")


def check_compiler(facts: dict) -> Check:
    if facts.get("cxx_compiler"):
        return Check("c++ compiler", "ok", facts["cxx_compiler"])
    return Check("c++ compiler", "fail", "no g++, c++ or clang++ on PATH: Inductor cannot compile CPU kernels",
                 "apt-get install g++")


def check_isolation(facts: dict) -> Check:
    """The sandbox: bubblewrap present, and a trial run inside it contained (uid, capabilities,
    seccomp, no network, no host processes). Without it repros are refused (or, with
    --unsafe-no-sandbox, run with far weaker isolation)."""
    if "sandbox_ok" not in facts:  # an older probe: only unshare was checked
        if facts.get("namespaces_ok"):
            return Check("sandbox", "ok", facts.get("namespaces_note") or "unshare works")
        return Check("sandbox", "fail", facts.get("namespaces_note") or "unshare failed", "apt-get install bubblewrap")
    if not facts.get("bubblewrap"):
        return Check("sandbox", "fail", "bubblewrap is not installed: repros are refused (or run unsafely with "
                     "--unsafe-no-sandbox)", "apt-get install bubblewrap")
    if not facts.get("sandbox_ok"):
        return Check("sandbox", "fail", facts.get("sandbox_note") or "a trial sandbox failed",
                     "allow unprivileged user namespaces (Ubuntu 24.04: sysctl kernel.apparmor_restrict_unprivileged_userns=0; "
                     f"in a container: run it with user namespaces allowed; see {DOCS})")
    version = facts.get("bubblewrap_version") or "bubblewrap"
    return Check("sandbox", "ok", f"{version}: {facts.get('sandbox_note') or 'a trial run was contained'}")


def check_limits(facts: dict) -> Check:
    """Memory across a run's processes is capped only by a delegated cgroup v2; rlimits are per process."""
    mechanism = facts.get("limits_mechanism")
    if mechanism is None:
        return Check("limits", "warn", "not probed")
    if "cgroup" in mechanism:
        return Check("limits", "ok", f"{mechanism}: memory is capped across the whole run")
    return Check("limits", "warn", "per-process rlimits only: many processes together can still exhaust memory",
                 "delegate a cgroup v2 with the memory controller and set PT2_SANDBOX_CGROUP to it")


def check_disk(facts: dict) -> Check:
    free = facts.get("disk_free_bytes")
    where = facts.get("disk_path") or "the temp dir"
    if free is None:
        return Check("disk", "fail", f"{where}: {facts.get('disk_error', 'cannot be read')}", "set TMPDIR to a writable disk")
    detail = f"{free / GiB:.1f} GiB free in {where}"
    if free < DISK_FAIL_BYTES:
        return Check("disk", "fail", detail, f"free space or point TMPDIR elsewhere (at least {DISK_WARN_BYTES // GiB} GiB)")
    if free < DISK_WARN_BYTES:
        return Check("disk", "warn", detail, f"{DISK_WARN_BYTES // GiB} GiB keeps debug artifacts and caches comfortable")
    return Check("disk", "ok", detail)


def check_tlparse(facts: dict) -> Check:
    if facts.get("tlparse"):
        return Check("tlparse", "ok", facts["tlparse"])
    return Check("tlparse", "warn", "not found: reports will have no tlparse HTML", "pip install 'pt2-triage[runner]'")


def diagnose(facts: dict, need_gpu: bool = False) -> list[Check]:
    """Every check, in the order a person fixes them."""
    return [check_python(facts), check_torch(facts), check_gpu(facts, need_gpu), check_triton(facts, need_gpu),
            check_compiler(facts), check_isolation(facts), check_limits(facts), check_disk(facts), check_tlparse(facts)]


def healthy(checks: list[Check]) -> bool:
    return all(check.status != "fail" for check in checks)
