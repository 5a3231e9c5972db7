"""What `pt2-triage reproduce` reported on an NVIDIA H100 (torch 2.11, Triton 3.6), kept as fixtures.

The raw outputs of the same runs are corpus cases (tests/corpus/recorded/{nan_assert,
out_of_bounds_index,triton_compile_error,triton_runtime_assert}*.log).
"""
import json
from pathlib import Path

import pytest

from bot.report import TriageReport

GPU = Path(__file__).parent / "fixtures" / "gpu"


@pytest.mark.parametrize("name, category", [
    ("triton_compile_error", "triton_kernel_bug"),
    ("triton_runtime_assert", "triton_kernel_bug"),
    ("out_of_bounds_index", "triton_kernel_bug"),
    ("nan_assert", "runtime_crash"),
])
def test_h100_reports_load_and_reproduced(name, category, classifier):
    report = TriageReport.from_dict(json.loads((GPU / f"{name}.report.json").read_text()))
    assert report.machine.device_name == "NVIDIA H100 80GB HBM3" and report.machine.cuda_available
    assert report.reproduction.status == "reproduced" and report.reproduction.device == "cuda"
    # re-classify the stored run output with today's rules (the report predates some of them)
    final_run = report.reproduction.runs[-1]
    assert classifier.classify_text(final_run.output_tail).category == category
