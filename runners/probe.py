"""What the machine a repro runs on actually has: Python, torch, Triton, CUDA, a C++ compiler.

Probed in a sandboxed child so this process never imports torch (seconds) or initialises CUDA
(which would forbid forking a warm worker afterwards).
"""
from __future__ import annotations

import glob
import json
import sys

from .sandbox import GPU_DEVICES, RunSpec, run

PROBE_MARKER = "PT2_TRIAGE_PROBE "
PROBE_SCRIPT = f'''
import json, platform, shutil
info = {{"python_version": platform.python_version(), "platform": platform.platform(),
        "cxx_compiler": shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")}}
try:
    import torch
    info["torch_version"] = torch.__version__
    info["cuda_version"] = torch.version.cuda
    info["cuda_available"] = bool(torch.cuda.is_available())
    if info["cuda_available"]:
        info["device_name"] = torch.cuda.get_device_name(0)
except Exception as exc:
    info["torch_error"] = repr(exc)
try:
    import triton
    info["triton_version"] = triton.__version__
except Exception:
    pass
print({PROBE_MARKER!r} + json.dumps(info))
'''


def probe_machine(python: str = sys.executable, timeout_s: float = 120, unsafe_no_sandbox: bool = False) -> dict:
    """A dict of versions and devices; `probe_error` says why when the probe itself failed. The
    probe is our own script, so it is shown the GPUs (when the machine has any) to count them.
    Raises sandbox.SandboxUnavailable without bubblewrap, unless `unsafe_no_sandbox`."""
    result = run(RunSpec(script=PROBE_SCRIPT, python=python, timeout_s=timeout_s, gpu=bool(glob.glob(GPU_DEVICES)),
                         unsafe_no_sandbox=unsafe_no_sandbox))
    for line in result.stdout.splitlines():
        if line.startswith(PROBE_MARKER):
            return json.loads(line[len(PROBE_MARKER):])
    return {"probe_error": f"probe {result.status} (exit {result.exit_code}): {result.stderr.strip()[-300:]}"}
