"""What `pt2-triage reproduce` reported on an NVIDIA H100 (torch 2.11, Triton 3.6), kept as fixtures.

The raw outputs of the same runs are corpus cases (tests/corpus/recorded/{nan_assert,
out_of_bounds_index,triton_compile_error,triton_runtime_assert}*.log).
"""
import json

import pytest

from bot.core.report import TriageReport
from tests import paths

GPU = paths.FIXTURES / "gpu"


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
    assert classifier.classify_text(final_run.output_tail, report=False).category == category


def test_h100_triage_generated_a_cuda_test_that_failed_there_for_the_same_reason():
    """`pt2-triage triage tests/repros/gpu/triton_compile_error.py` on the H100: the whole report."""
    from bot.pipeline.comment import render_comment
    from bot.core.graph_breaks import load_registry
    from bot.core.ruleset import load_ruleset

    report = TriageReport.from_dict(json.loads((GPU / "triage_triton_compile_error.report.json").read_text()))
    test = report.regression_test
    assert test.device == "cuda" and test.verification == "fails_same"
    assert '@unittest.skipUnless(torch.cuda.is_available(), "requires CUDA")' in test.file_source
    assert report.test_suggestion.path == "test/inductor/test_cuda_repro.py"
    comment = render_comment(report, load_ruleset(), load_registry())
    assert "reproduced (1/1 runs) on cuda with torch 2.11.0+cu130" in comment
    assert "fails now, for the same reason as the repro" in comment
