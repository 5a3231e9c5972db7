"""The ladder's runs: which rungs run, which are reused from the minimizer, which are not needed.

The runner here answers with the README example's real outputs (a graph break under fullgraph=True
that backend="eager" already shows); the real runs are in test_triage.py's end-to-end tests."""
from __future__ import annotations

import json
import threading

from bot.core import outcome
from bot.core.classify import Classifier
from bot.core.ladder import compiler_free
from bot.core.report import RunRecord
from bot.core.graph_breaks import load_registry
from bot.core.ruleset import load_ruleset
from bot.pipeline.ladder import LadderRunner, Target, try_workarounds
from bot.pipeline.reproduce import PROBE_ENV
from runners.sandbox import RunResult

CLASSIFIER = Classifier(load_ruleset(), load_registry())
SCRIPT = """\
import torch

def gate(x):
    if x.sum() > 0:
        return x
    return -x

torch.compile(gate, fullgraph=True)(torch.randn(4))
"""
UNSUPPORTED = ("Data-dependent branching\n  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). "
               "Dynamo does not support tracing dynamic control flow.")
GRAPH_BREAK = RunResult(
    exit_code=1, signal=None, duration_s=1.0, peak_rss_bytes=None, stdout="",
    stderr=('Traceback (most recent call last):\n  File "/sandbox/repro.py", line 8, in <module>\n'
            '    torch.compile(gate, fullgraph=True)(torch.randn(4))\n'
            f"torch._dynamo.exc.Unsupported: {UNSUPPORTED}\n"),
    uncaught_exception={"type": "torch._dynamo.exc.Unsupported", "message": UNSUPPORTED})
CLEAN = RunResult(exit_code=0, signal=None, duration_s=0.5, peak_rss_bytes=None, stdout="tensor([1.])\n", stderr="")


class Runs:
    """A runner that answers by probe: the compiler off and fullgraph=False run clean, every backend fails."""

    def __init__(self):
        self.probes: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, spec):
        probe = json.loads(spec.env.get(PROBE_ENV, "{}"))
        with self.lock:
            self.probes.append(probe)
        return CLEAN if probe.get("compiler") == "off" or probe.get("fullgraph") is False else GRAPH_BREAK


def target(known=None) -> Target:
    classification = CLASSIFIER.classify_text(GRAPH_BREAK.stderr)
    record = RunRecord("first run", {}, "failed", 1, None, 6.0, None, (), True, True, classification, GRAPH_BREAK.stderr,
                       failed=True, exception=f"torch._dynamo.exc.Unsupported: {UNSUPPORTED}")
    return Target(SCRIPT, "minimized", "graph_break", record, known=known or {})


def outcomes(report) -> dict[str, str]:
    return {r.rung: r.outcome for r in report.rungs}


def test_the_rungs_above_the_first_that_fails_the_same_way_are_not_run():
    runs = Runs()
    report = LadderRunner(CLASSIFIER, runs, timeout_s=60, jobs=1, gpu=False).climb(target())
    assert report.owner == "Dynamo" and report.cheapest_backend == "eager"
    assert outcomes(report) == {"no_compiler": "passes", "eager": "fails", "aot_eager": "not_needed",
                                "aot_eager_decomp_partition": "not_needed", "inductor": "not_needed",
                                "no_fullgraph": "passes"}
    assert runs.probes == [{"compiler": "off"}, {"backend": "eager"}, {"backend": "eager", "fullgraph": False}]


def test_the_minimizers_runs_of_its_result_are_the_ladders_rungs_and_not_made_again():
    """The minimizer ran its result with the compiler off and on its candidates' backend (eager), and
    on the script's own backend (no probe: the inductor rung of a default-backend compile)."""
    graph_break = CLASSIFIER.classify_text(GRAPH_BREAK.stderr)
    known = {json.dumps({"compiler": "off"}): (CLASSIFIER.classify_text(""), CLEAN),
             json.dumps({"backend": "eager"}): (graph_break, GRAPH_BREAK), None: (graph_break, GRAPH_BREAK)}
    runs = Runs()
    report = LadderRunner(CLASSIFIER, runs, timeout_s=60, jobs=2, gpu=False).climb(target(known))
    assert outcomes(report)["eager"] == "fails" and outcomes(report)["inductor"] == "fails"
    assert report.owner == "Dynamo" and runs.probes == [{"backend": "eager", "fullgraph": False}]  # only the switch ran


def test_a_known_run_that_timed_out_is_run_again():
    timed_out = RunResult(exit_code=None, signal=None, duration_s=5.0, peak_rss_bytes=None, stdout="", stderr="",
                          limits_fired=("timeout",))
    known = {json.dumps({"backend": "eager"}): (CLASSIFIER.classify_text(""), timed_out)}
    runs = Runs()
    LadderRunner(CLASSIFIER, runs, timeout_s=60, jobs=1, gpu=False).climb(target(known))
    assert {"backend": "eager"} in runs.probes


def test_a_workaround_runs_on_the_backend_that_showed_the_failure_and_says_so():
    output = GRAPH_BREAK.stderr.replace("line 8", "line 4")
    seen = []
    found = try_workarounds(("torch_cond",), SCRIPT, output, lambda spec: seen.append(spec.env) or CLEAN,
                            timeout_s=60, gpu=False, backend="eager")
    assert found.verified and "torch.cond(" in found.source
    assert json.loads(seen[0][PROBE_ENV]) == {"backend": "eager"}
    assert found.verification == 'ran to completion with backend="eager", the cheapest backend that showed the failure'
    mine = try_workarounds(("torch_cond",), SCRIPT, output, lambda spec: seen.append(spec.env) or CLEAN, timeout_s=60, gpu=False)
    assert PROBE_ENV not in seen[-1] and mine.verification == "ran to completion"  # the script's own backend


def test_a_script_that_never_reaches_the_compiler_owns_its_failure_without_a_run():
    """pytorch#141219: an ATen op crashing on a fuzzer's inputs, no torch.compile anywhere. Its own
    failing run was the compiler-off run; eager PyTorch owns it, whatever the run was classified as."""
    def no_run(spec):
        raise AssertionError("ran")
    script = ("import torch\n\nq = torch.full((7, 9, 0, 7), 0, dtype=torch.half)\n"
              "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0, True)\n")
    crash = "Fatal Python error: Floating point exception\n"
    record = RunRecord("first run", {}, "crashed", None, "SIGFPE", 3.0, None, (), True, True,
                       CLASSIFIER.classify_text(crash), crash, failed=True)
    report = LadderRunner(CLASSIFIER, no_run, timeout_s=60, jobs=1, gpu=False).climb(
        Target(script, "repro", "runtime_crash", record))
    assert report.category == "not_pt2" and report.owner == "eager PyTorch or your code"
    assert outcomes(report)["no_compiler"] == "fails" and "calls no part of the compiler" in report.sentence
    table = CLASSIFIER.ruleset.ladder
    assert compiler_free(table, script, crash)
    compiles = script + "torch.compile(lambda: q)()\n"
    from_a_package = script.replace("import torch\n", "import torch\nimport xformers\n")  # it may compile inside
    through_dynamo = 'File "/venv/torch/_dynamo/eval_frame.py", line 9, in _fn\n' + crash
    assert not any([compiler_free(table, compiles, crash), compiler_free(table, from_a_package, crash),
                    compiler_free(table, script, through_dynamo)])


def test_a_silent_reproductions_measurement_is_the_failure_text_the_disposition_rules_read():
    """The recompiles' first failing guard is in what the differential run measured, not in its log."""
    from bot.core.records import Classification
    from bot.core.report import Reproduction, SilentCheck
    from bot.pipeline.ladder import disposition_facts

    guard = "`step` recompiled 20 time(s) (limit 256); first failing guard: `0/0: tensor 'k_cache' size mismatch at index 2`"
    run = RunRecord("differential run (recompilation)", {}, "ok", 0, None, 1.0, None, (), True, False,
                    Classification("not_pt2", 0.5, "not_pt2|-|-"), "model v0 ok\n", probe={"calls": []})
    reproduction = Reproduction("reproduced", True, 1, 1, "cpu", "performance", "recompilation", True, "Reproduced.",
                                runs=(run,), silent=(SilentCheck("recompilation", True, guard),
                                                     SilentCheck("performance", False, "per call: 0.95x")))
    facts = disposition_facts(reproduction, "step = torch.compile(f, dynamic=False)\n", "", None)
    assert facts.state == "reproduced" and guard in facts.failure_text and "0.95x" not in facts.failure_text


UNUSED = "The differentiated Tensor at index 0 appears to not have been used in the graph."
GRAD_SCRIPT = """\
import torch

emb = torch.nn.Embedding(3, 2)
def f(ids):
    e = emb(ids)
    return e.mean(), e

out, e = torch.compile(f)(torch.tensor([1]))
torch.autograd.grad(out, e)
"""
GRAD_ERROR = RunResult(
    exit_code=1, signal=None, duration_s=1.0, peak_rss_bytes=None, stdout="",
    stderr=('Traceback (most recent call last):\n  File "/sandbox/repro.py", line 9, in <module>\n'
            f"    torch.autograd.grad(out, e)\nRuntimeError: {UNUSED}\n"),
    uncaught_exception={"type": "RuntimeError", "message": UNUSED})


def test_an_error_raised_in_the_scripts_code_only_compiled_is_filed_under_the_layer_that_owns_it():
    """fresh_issues_13: `autograd.grad` on a compiled function's output fails in the script's own
    code, only with the compiler on: the compiled-only rule files it as a run-time failure by default,
    and the ladder, finding that aot_eager is the first backend to show it, files it as AOTAutograd's."""
    def runs(spec):
        probe = json.loads(spec.env.get(PROBE_ENV, "{}"))
        return CLEAN if probe.get("compiler") == "off" or probe.get("backend") == "eager" else GRAD_ERROR
    compiled_only = outcome.compiled_only(CLASSIFIER.classify_text(GRAD_ERROR.stderr), "runtime_crash")
    record = RunRecord("first run", {}, "failed", 1, None, 6.0, None, (), True, True, compiled_only, GRAD_ERROR.stderr,
                       failed=True, exception=f"RuntimeError: {UNUSED}")
    report = LadderRunner(CLASSIFIER, runs, timeout_s=60, jobs=1, gpu=False).climb(
        Target(GRAD_SCRIPT, "minimized", "runtime_crash", record))
    assert report.owner == "AOTAutograd" and report.category == "aot_autograd_failure"
