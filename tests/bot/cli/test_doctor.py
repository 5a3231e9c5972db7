"""`pt2-triage doctor`: verdicts from plain facts, and the command on this machine."""
from __future__ import annotations

import json

import pytest

from bot.cli.main import main
from bot.cli.doctor_checks import GiB, diagnose, healthy

GOOD_CPU = {"python_version": "3.11.7", "torch_version": "2.13.0+cpu", "cuda_version": None, "cuda_available": False,
            "cxx_compiler": "/usr/bin/g++", "bubblewrap": "/usr/bin/bwrap", "bubblewrap_version": "bubblewrap 0.8.0",
            "sandbox_ok": True, "sandbox_note": "a trial run was contained (uid 65534, no capabilities, seccomp)",
            "limits_mechanism": "cgroup v2 + rlimit", "disk_path": "/tmp", "disk_free_bytes": 80 * GiB,
            "tlparse": "/venv/bin/tlparse"}
GOOD_GPU = {**GOOD_CPU, "torch_version": "2.11.0+cu130", "cuda_version": "13.0", "cuda_available": True,
            "device_name": "NVIDIA H100 80GB HBM3", "triton_version": "3.6.0"}


def by_name(checks):
    return {check.name: check for check in checks}


def test_a_good_cpu_runner_passes_every_check():
    checks = diagnose(GOOD_CPU)
    assert healthy(checks)
    assert {c.status for c in checks} == {"ok"}


def test_a_good_gpu_runner_passes_as_a_gpu_runner():
    checks = by_name(diagnose(GOOD_GPU, need_gpu=True))
    assert checks["cuda"].detail == "CUDA visible: NVIDIA H100 80GB HBM3"
    assert checks["triton"].status == "ok"


@pytest.mark.parametrize("change, name, fix_mentions", [
    ({"torch_version": None, "torch_error": "ModuleNotFoundError('torch')"}, "torch", "pip install torch"),
    ({"cxx_compiler": None}, "c++ compiler", "g++"),
    ({"sandbox_ok": False, "sandbox_note": "bwrap: setting up uid map: Permission denied"}, "sandbox", "user namespaces"),
    ({"sandbox_ok": False, "bubblewrap": None}, "sandbox", "apt-get install bubblewrap"),
    ({"disk_free_bytes": 2 * GiB}, "disk", "TMPDIR"),
    ({"python_version": "3.9.18"}, "python", "3.10"),
    ({"python_version": None, "probe_error": "probe failed (exit 127)"}, "python", "--python"),
])
def test_what_makes_a_runner_unusable_fails_with_a_fix(change, name, fix_mentions):
    checks = by_name(diagnose({**GOOD_CPU, **change}))
    assert checks[name].status == "fail"
    assert fix_mentions in checks[name].fix
    assert not healthy(list(checks.values()))


def test_a_gpu_runner_without_a_gpu_fails():
    cpu_build = by_name(diagnose(GOOD_CPU, need_gpu=True))
    assert cpu_build["cuda"].status == "fail" and "CPU build" in cpu_build["cuda"].detail
    no_device = by_name(diagnose({**GOOD_GPU, "cuda_available": False}, need_gpu=True))
    assert "nvidia-smi" in no_device["cuda"].fix
    assert by_name(diagnose({**GOOD_GPU, "triton_version": None}, need_gpu=True))["triton"].status == "fail"


def test_small_problems_only_warn():
    checks = diagnose({**GOOD_CPU, "disk_free_bytes": 10 * GiB, "tlparse": None, "limits_mechanism": "rlimit"})
    assert healthy(checks)
    assert {c.name for c in checks if c.status == "warn"} == {"disk", "tlparse", "limits"}
    assert "PT2_SANDBOX_CGROUP" in by_name(checks)["limits"].fix


@pytest.mark.slow
def test_doctor_on_this_machine(capsys):
    """The real probe (torch imported in a sandboxed child); this CI machine is a healthy cpu runner."""
    assert main(["doctor", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["healthy"] is True
    assert result["facts"]["torch_version"].startswith("2.")
    assert [c["name"] for c in result["checks"]][:3] == ["python", "torch", "cuda"]


@pytest.mark.slow
def test_doctor_says_what_is_missing_and_fails(capsys, tmp_path):
    """A python without torch, and a GPU asked for: exit 1, and the readable output names the fixes."""
    import subprocess
    import sys

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    assert main(["doctor", "--gpu", "--python", str(bare / "bin" / "python")]) == 1
    out = capsys.readouterr().out
    assert "FAIL torch" in out and "pip install torch" in out
    assert "FAIL cuda" in out
    assert "cannot run triage jobs yet" in out
