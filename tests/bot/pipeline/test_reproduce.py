"""`reproduce` end to end with real torch on CPU, one repro script per category (tests/repros/)."""
from __future__ import annotations

import json

import pytest

from bot.cli.main import main
from bot.core.report import MachineEnvironment, TriageReport
from bot.pipeline.reproduce import (PROBE_ENV, ReproduceOptions, Reproducer, decide_status, diagnostics_env, machine_environment,
                                    needs_gpu, record_reproduces)
from runners.probe import probe_machine
from runners.sandbox import RunSpec, run
from tests import paths

REPROS = paths.REPROS


def repro(name: str) -> str:
    return (REPROS / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def machine():
    return machine_environment(probe_machine())


@pytest.fixture
def reproducer(classifier, machine):
    def make(out_dir=None, **options):
        options.setdefault("minify_graph", False)
        return Reproducer(classifier, run, machine, ReproduceOptions(**options), out_dir)
    return make


# --- pure policy -------------------------------------------------------------------------------------

def test_diagnostics_env_drops_the_minifier_switches_and_adds_artifact_switches(ruleset):
    env = diagnostics_env(ruleset.categories["backend_compiler_failed"], collect_artifacts=True)
    assert "TORCHDYNAMO_REPRO_AFTER" not in env
    assert env["TORCH_COMPILE_DEBUG"] == "1" and env["TORCH_TRACE"] == "torch_trace"
    assert env["PYTHONFAULTHANDLER"] == "1"
    assert "TORCH_TRACE" not in diagnostics_env(ruleset.categories["graph_break"], collect_artifacts=False)


def test_device_choice():
    assert needs_gpu("x = torch.randn(4, device='cuda')", "auto")
    assert not needs_gpu("x = torch.randn(4)", "auto")
    assert needs_gpu("x = 1", "cuda") and not needs_gpu("x.cuda()", "cpu")


def test_status_from_runs():
    from tests.bot.core.test_report import record
    assert decide_status([record("failed")] * 3, 3) == "reproduced"
    assert decide_status([record("failed"), record("ok")], 1) == "flaky"
    assert decide_status([record("timeout")], 0) == "timeout"
    assert decide_status([record("limit")], 0) == "limit"
    assert decide_status([record("crashed")], 0) == "crashed"
    assert decide_status([record("ok")], 0) == "not_reproduced"


# --- real runs --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name, category", [
    ("graph_break_fullgraph", "graph_break"),
    ("graph_break_logged_print", "graph_break"),
    ("recompile_limit", "recompilation"),
    ("inductor_compile_error", "backend_compiler_failed"),
    ("inductor_runtime_error", "runtime_crash"),
    ("inductor_accuracy", "accuracy"),
    ("export_data_dependent", "export_failure"),
    ("dynamic_shapes_item", "dynamic_shapes"),
    ("dynamic_shapes_specialized", "dynamic_shapes"),
    ("segfault_after_compile", "runtime_crash"),
])
def test_each_cpu_category_reproduces(reproducer, name, category):
    reproduction = reproducer().reproduce(repro(name))
    assert (reproduction.status, reproduction.category_from_run) == ("reproduced", category), reproduction.runs[-1].output_tail
    assert reproduction.reproduced and reproduction.device == "cpu"
    assert reproduction.runs[-1].env.items() >= {k: v for k, v in diagnostics_env(
        reproducer().classifier.ruleset.categories[category], collect_artifacts=False).items()}.items()


@pytest.mark.slow
def test_a_script_that_passes_does_not_reproduce(reproducer):
    reproduction = reproducer().reproduce(repro("passes"))
    assert (reproduction.status, reproduction.reproduced, reproduction.runs_total) == ("not_reproduced", False, 1)


@pytest.mark.slow
def test_a_repro_for_another_torch_fails_before_the_bug_and_is_not_a_reproduction(reproducer):
    """The option is gone from this torch, so the run raises inside torch's config machinery before
    anything is compiled: not reproduced, with the reason, whatever the error's frames."""
    script = ("import torch\nimport torch._inductor.config as config\n\n"
              "@config.patch(lowmem_dropout=False)\ndef f(x):\n    return torch.nn.functional.dropout(x, 0.1)\n\n"
              "torch.compile(f)(torch.rand(8))\n")
    reproduction = reproducer().reproduce(script)
    assert not reproduction.reproduced and reproduction.reason == "torch_api_changed", reproduction.summary
    assert reproduction.runs[0].failed and reproduction.runs[0].blocked == "torch_api_changed"
    assert "lowmem_dropout" in reproduction.reason_text


def test_a_script_that_sets_its_own_stance_still_runs_clean_with_the_compiler_off(reproducer):
    """`set_stance("fail_on_recompile")` in the script used to turn the compiler back on in the
    compiler-off run, so the recompile error showed there too and was called eager's own."""
    script = ("import torch\n\n@torch.compile(dynamic=False)\ndef scale(x):\n    return x * 2\n\n\n"
              "scale(torch.ones(4))\ntorch.compiler.set_stance('fail_on_recompile')\n"
              "with torch.compiler.set_stance('fail_on_recompile'):\n    scale(torch.ones(1))\n")
    reproduction = reproducer().reproduce(script)
    assert reproduction.reproduced and reproduction.category_from_run == "recompilation", reproduction.summary
    off = run(RunSpec(script=script, env={PROBE_ENV: json.dumps({"compiler": "off"})}, timeout_s=120))
    assert off.exit_code == 0, off.stderr[-2000:]


# The compiled pooling returns a non-contiguous output where eager's is contiguous, so the caller's
# .view() fails only under the compiler. (Not in tests/repros/: its output alone reads as not PT2,
# so it is no case for the text classifier's corpus.)
COMPILED_OUTPUT_STRIDES = """\
import torch
import torch.nn.functional as F


def pool(x):
    return F.max_pool1d(x.transpose(1, 2), 2)


with torch.no_grad():
    out = torch.compile(pool)(torch.randn(2, 8, 4))
    print(out.view(2, -1).shape)
"""


@pytest.mark.slow
def test_an_error_in_the_scripts_own_code_that_only_the_compiler_causes_reproduces(reproducer):
    """The compiled pooling's output is not contiguous where eager's is, and the script's `.view()` of
    it fails: an error outside the compiler, but the script runs clean with the compiler off."""
    reproduction = reproducer().reproduce(COMPILED_OUTPUT_STRIDES)
    assert reproduction.reproduced and reproduction.category_from_run == "runtime_crash", reproduction.summary
    assert "only with the compiler on" in reproduction.summary
    assert [r.purpose for r in reproduction.runs][-1].startswith("compiler off")
    assert reproduction.runs[0].classification.signature.startswith("runtime_crash|RuntimeError|view size")
    said_mismatch = reproducer().reproduce(COMPILED_OUTPUT_STRIDES,
                                           issue_text="Compiled output differs from eager: `.view()` fails only with torch.compile")
    assert said_mismatch.reproduced and said_mismatch.category_from_run in ("accuracy", "runtime_crash")


OWN_CHECK_OF_AN_ACCURACY_BUG = """\
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x) * 2


x = torch.randn(64)
diff = (torch.compile(f)(x) - f(x)).abs().max().item()
assert diff < 1e-4, f"served scores differ from the reference (max diff {diff:.4f})"
"""


@pytest.mark.slow
def test_a_measured_mismatch_that_the_scripts_own_check_also_fails_is_a_failing_run_to_minimize(reproducer):
    """The differential run finds the mismatch, and the script's own `assert` fails on it too, with an
    error outside the compiler: those failing runs are the reproduction (clean with the compiler off),
    so the minimizer has a failure to keep; the measurement stays beside it."""
    reproduction = reproducer().reproduce(OWN_CHECK_OF_AN_ACCURACY_BUG,
                                          issue_text=WRONG_RESULTS_ISSUE + OWN_CHECK_OF_AN_ACCURACY_BUG)
    assert reproduction.reproduced and reproduction.category_from_run == "accuracy", reproduction.summary
    assert "only with the compiler on" in reproduction.summary
    assert any(record_reproduces(r) for r in reproduction.runs)
    assert [c.kind for c in reproduction.silent if c.reproduced] == ["accuracy"]


SERVED_BY_EXPORT = """\
import torch


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1


model = Counter()
served = torch.export.export(model, (torch.ones(2),)).module()
for _ in range(3):
    served(torch.ones(2))
assert model.calls == 3, f"the served model ran {model.calls} times"
"""


def test_a_scripts_own_check_failing_only_with_export_on_is_exports_failure(reproducer):
    """No torch.compile for the stance to turn off, but the compiler-off run also replaces
    torch.export (and AOTInductor's package) by the module itself: the script's own `assert` then
    passes, so its failure is export's, filed as the entry point's category whatever the text says
    (fresh_issues_13's AOTInductor package that ignored a new value of an input export had fixed)."""
    reproduction = reproducer().reproduce(SERVED_BY_EXPORT, issue_text="# served model differs\n" + SERVED_BY_EXPORT)
    assert reproduction.reproduced and reproduction.category_from_run == "export_failure", reproduction.summary
    assert "only with the compiler on" in reproduction.summary
    assert [r.status for r in reproduction.runs if r.purpose.startswith("compiler off")] == ["ok"]


def test_an_error_eager_shares_is_still_no_reproduction(reproducer):
    reproduction = reproducer().reproduce(repro("eager_shape_error"))
    assert not reproduction.reproduced and reproduction.reason == "fails_outside_pt2", reproduction.summary
    assert reproduction.runs[-1].purpose.startswith("compiler off") and reproduction.runs[-1].status == "failed"


@pytest.mark.slow
def test_flaky_script_is_reported_with_counts(reproducer):
    reproduction = reproducer(runs=8).reproduce(repro("flaky_graph_break"))
    assert reproduction.status in ("flaky", "reproduced", "not_reproduced")
    assert reproduction.runs_total == 8 or reproduction.status == "not_reproduced"
    if reproduction.status == "flaky":
        assert 0 < reproduction.runs_reproduced < 8
        assert f"in {reproduction.runs_reproduced} of 8 runs" in reproduction.summary


@pytest.mark.slow
def test_category_from_the_issue_text_is_corrected_by_the_run(reproducer):
    issue = "Our export fails:\n```\ntorch._dynamo.exc.UserError: export failed ... torch.export.export\nThe error above occurred when calling torch.export.export\n```"
    reproduction = reproducer().reproduce(repro("graph_break_fullgraph"), issue_text=issue)
    assert reproduction.category_from_text == "export_failure"
    assert reproduction.category_changed and reproduction.category_from_run == "graph_break"
    assert [r.purpose for r in reproduction.runs] == ["diagnostics for export_failure", "diagnostics for graph_break"]


@pytest.mark.slow
def test_a_graph_break_reproduces_a_report_about_graph_breaks_but_not_a_crash_that_is_gone(reproducer):
    """A crash report whose script now passes with a graph break (Dynamo refusing what it once
    asserted on) is not reproduced by that graph break: the measurement is shown, marked as not the
    reported failure."""
    crash = ("compiling with backend eager crashes\n```\ntorch._dynamo.exc.InternalTorchDynamoError: "
             "AssertionError: \n\nfrom user code:\n   File \"repro.py\", line 9, in forward\n```")
    gone = reproducer().reproduce(repro("graph_break_logged_print"), issue_text=crash)
    assert gone.category_from_text == "dynamo_internal_error" and not gone.reproduced, gone.summary
    [measured] = [check for check in gone.silent if check.kind == "graph_break"]
    assert not measured.reproduced and "not the failure the report describes" in measured.summary
    about_breaks = reproducer().reproduce(repro("graph_break_logged_print"), issue_text="print() causes a graph break")
    assert about_breaks.reproduced and about_breaks.category_from_run == "graph_break", about_breaks.summary


@pytest.mark.slow
def test_when_the_run_agrees_with_the_text_one_run_carries_the_diagnostics_and_artifacts(reproducer, tmp_path):
    issue = "fullgraph=True fails:\n```\ntorch._dynamo.exc.Unsupported: Data-dependent branching\n```"
    reproduction = reproducer(out_dir=tmp_path).reproduce(repro("graph_break_fullgraph"), issue_text=issue)
    assert reproduction.status == "reproduced" and not reproduction.category_changed
    assert [r.purpose for r in reproduction.runs] == ["diagnostics for graph_break"]
    assert "artifacts/torch_trace" in reproduction.artifacts and (tmp_path / "artifacts" / "torch_trace").is_dir()


def test_gpu_repro_on_a_cpu_machine_is_not_run(classifier):
    cpu_only = MachineEnvironment(torch_version="2.13.0+cpu", cuda_available=False)
    ran = []
    reproducer = Reproducer(classifier, lambda spec: ran.append(spec), cpu_only)
    reproduction = reproducer.reproduce("import torch\ntorch.compile(lambda x: x)(torch.ones(2, device='cuda'))\n",
                                        issue_text="CUDA error: an illegal memory access was encountered after torch.compile")
    assert ran == [] and reproduction.status == "needs_gpu" and reproduction.device == "cuda"
    assert reproduction.category_from_text == "runtime_crash"
    assert "needs a CUDA GPU" in reproduction.summary


@pytest.mark.slow
def test_timeout_is_its_own_status(reproducer):
    reproduction = reproducer(timeout_s=3).reproduce("import torch, time\ntorch.compile(lambda x: x)(torch.ones(1))\ntime.sleep(60)\n")
    assert reproduction.status == "timeout" and not reproduction.reproduced


@pytest.mark.slow
def test_cli_writes_report_and_artifacts(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", str(REPROS / "graph_break_fullgraph.py"), "--out", str(out), "--json", "--warm"]) == 0
    printed = json.loads(capsys.readouterr().out)
    report = TriageReport.from_dict(json.loads((out / "report.json").read_text()))
    assert printed == report.to_dict()
    assert report.classification.category == "graph_break" and report.classification.graph_break_id == "GB0170"
    assert report.machine.torch_version.startswith("2.13")
    assert report.reproduction.runs[0].warm and report.reproduction.runs[0].network_isolated
    assert (out / "artifacts" / "run-1.log").is_file()
    assert "artifacts/torch_trace" in report.reproduction.artifacts
    if "artifacts/tlparse/index.html" in report.reproduction.artifacts:
        assert (out / "artifacts" / "tlparse" / "index.html").is_file()


@pytest.mark.slow
def test_megabytes_of_compiler_warnings_do_not_hide_the_error_line(reproducer):
    reproduction = reproducer().reproduce(repro("inductor_compile_error"))
    evidence = [e.text for e in reproduction.runs[-1].classification.evidence]
    assert any(": error: " in line for line in evidence)
    assert not any("warning:" in line for line in evidence)


@pytest.mark.slow
def test_torch_minifier_produces_a_repro_that_still_fails(classifier, machine, tmp_path):
    reproducer = Reproducer(classifier, run, machine, ReproduceOptions(minify_graph=True), tmp_path)
    reproduction = reproducer.reproduce(repro("inductor_compile_error"))
    assert reproduction.reproduced and reproduction.minifier is None  # the triage runs it last, on the minimized repro
    minifier = reproducer.minify(repro("inductor_compile_error"), "backend_compiler_failed")
    assert minifier.launcher_found and minifier.repro_source, minifier.note
    assert minifier.verified and minifier.signature.startswith("backend_compiler_failed|")
    assert (tmp_path / "artifacts" / "minifier" / "repro.py").is_file()


# pytorch/pytorch#139789's repro as filed (it prints; nothing asserts): on torch 2.13 the compiled
# function still reuses the graph compiled for non-aliased inputs and returns [3, 3, 3, 3]
ALIASED_INPUTS = '''import torch


def f(x, y):
    x.mul_(2)
    return x + y


f_compiled = torch.compile(f, backend="aot_eager")
out1 = f_compiled(torch.ones(4), torch.ones(4))
base = torch.ones(8)
out2 = f_compiled(base[:4], base[2:6])
print(out2)
'''

# pytorch/pytorch#183605's repro: eager gives NaN (1e-9 underflows in fp16), Inductor computes in
# fp32 and gives 0, which is what float64 gives too
FP16_NAN = '''import torch


def fn(x):
    var = x.var(dim=-1, keepdim=True)
    return x * torch.rsqrt(var + 1e-9)


print(torch.compile(fn)(torch.full((3, 5), 1e-10, dtype=torch.float16)))
'''

WRONG_RESULTS_ISSUE = "# torch.compile returns different results than eager\n\nThe outputs of the compiled function are wrong.\n"


@pytest.mark.slow
def test_a_printing_script_reproduces_accuracy_when_the_inputs_alias(reproducer):
    """Casting to float64 would copy the two views of `base` apart and make a reference that agrees
    with the wrong result; with aliased inputs eager itself is the reference."""
    reproduction = reproducer().reproduce(ALIASED_INPUTS, issue_text=WRONG_RESULTS_ISSUE + ALIASED_INPUTS)
    (check,) = [c for c in reproduction.silent if c.kind == "accuracy"]
    assert reproduction.reproduced and check.reproduced, check.summary
    assert check.numbers["max_abs"] == 1.0 and "differ on 1 of 2 calls" in check.summary


@pytest.mark.slow
def test_a_result_as_close_to_float64_as_eager_is_not_an_accuracy_failure_but_is_shown(reproducer):
    reproduction = reproducer().reproduce(FP16_NAN, issue_text=WRONG_RESULTS_ISSUE + FP16_NAN)
    (check,) = [c for c in reproduction.silent if c.kind == "accuracy"]
    assert not reproduction.reproduced and not check.reproduced
    assert "differs from eager on 1 of 1 calls (max abs difference inf) but is as close as eager" in check.summary


def test_nan_where_both_are_nan_is_no_difference():
    import torch
    from runners._torch_probe import _differences

    nan, inf = float("nan"), float("inf")
    assert _differences(torch.tensor([nan, inf, 1.0]), torch.tensor([nan, inf, 1.5])) == (0.5, 0.5)
    assert _differences(torch.tensor([nan, 1.0]), torch.tensor([0.0, 1.0]))[0] == inf  # NaN against a number
