"""Reading a run: what counts as a failure, silent failures, and why a repro did not reproduce."""
from __future__ import annotations

from dataclasses import dataclass

from bot.core.ruleset import load_ruleset

from bot.core.outcome import (blocking_reason, clean_run_reason, evidence_text, fixed_since, launcher_failed, missing_name, notebook_only, reason_from_exception,
                         render_uncaught, reported_error_absent, silent_findings, with_obvious_import)


@dataclass
class Run:
    exit_code: int | None = 0
    signal: str | None = None
    stdout: str = ""
    stderr: str = ""
    uncaught_exception: dict | None = None


RULES = load_ruleset().reproduction  # rules/reproduction.yaml, as the Ruleset reads it
TIMING = (("performance", "timing"),)
UNSUPPORTED = {"type": "torch._dynamo.exc.Unsupported", "message": "Data-dependent branching",
               "frames": [["/sandbox/repro.py", 9, "<module>"], ["/site/torch/_dynamo/eval_frame.py", 1183, "compile_wrapper"]],
               "cause": None, "context": None, "suppress_context": False}


def test_printed_tracebacks_of_a_run_that_exited_0_are_not_a_failure():
    forged = Run(exit_code=0, stdout="Traceback (most recent call last):\ntorch._dynamo.exc.Unsupported: fake\n")
    assert not launcher_failed(forged)
    assert "launcher's record" not in evidence_text(forged)


def test_the_launchers_exception_comes_last_so_it_is_the_final_error(classifier):
    run = Run(exit_code=1, stdout="RuntimeError: something printed earlier\n", uncaught_exception=UNSUPPORTED)
    text = evidence_text(run)
    assert text.rstrip().endswith("torch._dynamo.exc.Unsupported: Data-dependent branching")
    verdict = classifier.classify_text(text, report=False)
    assert (verdict.category, verdict.rule) == ("graph_break", "unsupported_exception")


def test_the_statement_that_raised_is_rendered_under_the_innermost_frame(classifier):
    failed_check = {"type": "builtins.AssertionError", "message": "differ by 18.2",
                    "frames": [["/sandbox/repro.py", 15, "<module>"]],
                    "raise_site": "assert torch.allclose(eager, compiled, atol=1e-4)"}
    text = evidence_text(Run(exit_code=1, uncaught_exception=failed_check))
    assert text.endswith('line 15, in <module>\n    assert torch.allclose(eager, compiled, atol=1e-4)\nAssertionError: differ by 18.2\n')
    verdict = classifier.classify(text.encode(), context="torch.compile(head)", report=False)
    assert (verdict.category, verdict.rule) == ("accuracy", "failed_value_check")


def test_a_chained_exception_is_rendered_root_cause_first():
    root = {"type": "builtins.KeyError", "message": "'x'", "frames": [["/site/torch/_dynamo/a.py", 1, "f"]]}
    final = {"type": "torch._dynamo.exc.InternalTorchDynamoError", "message": "KeyError: 'x'", "frames": [], "cause": root}
    text = render_uncaught(final)
    assert text.index("KeyError: 'x'") < text.index("direct cause") < text.index("InternalTorchDynamoError")


def test_accuracy_difference_reported_by_the_probe_is_a_reproduction():
    probe = {"calls": [{"call": 0, "compiled_s": 3.9, "eager_s": 0.001, "same": False, "max_abs": 1.0, "max_rel": 6.8e11,
                        "fp64_reference": True},
                       {"call": 1, "compiled_s": 0.001, "eager_s": 0.001, "same": True, "max_abs": 0.0, "max_rel": 0.0}]}
    (finding,) = silent_findings(probe, (("accuracy", "compare"),), RULES)
    assert finding.reproduced and finding.kind == "accuracy"
    assert "differ on 1 of 2 calls against an fp64 reference" in finding.summary
    assert finding.numbers["max_abs"] == 1.0


def test_performance_needs_both_the_ratio_and_an_absolute_difference():
    slow = {"calls": [{"call": 0, "compiled_s": 5.0, "compiled_median_s": 0.004, "eager_median_s": 0.002}]}
    tiny = {"calls": [{"call": 0, "compiled_s": 5.0, "compiled_median_s": 0.00004, "eager_median_s": 0.00002}]}
    assert silent_findings(slow, TIMING, RULES)[0].reproduced
    assert not silent_findings(tiny, TIMING, RULES)[0].reproduced  # 2x, but 20 microseconds: noise
    long_compile = {"calls": [{"call": 0, "compiled_s": 95.0, "compiled_median_s": 0.001, "eager_median_s": 0.002}]}
    assert silent_findings(long_compile, TIMING, RULES)[0].reproduced


def test_a_function_fast_once_warm_but_recompiling_on_every_call_the_script_makes_is_slow():
    """Warm medians time one input again and again; the script's own calls each had a new shape."""
    first = {"call": 0, "compiled_s": 9.0, "eager_s": 0.0003, "compiled_median_s": 0.00026, "eager_median_s": 0.00028}
    recompiling = {"calls": [first] + [{"call": i, "compiled_s": 0.4, "eager_s": 0.0003} for i in range(1, 20)]}
    (finding,) = silent_findings(recompiling, TIMING, RULES)
    assert finding.reproduced and "the script's 19 calls after the first: compiled 7.6 s, eager 0.0057 s" in finding.summary
    warm = {"calls": [first] + [{"call": i, "compiled_s": 0.00026, "eager_s": 0.0003} for i in range(1, 20)]}
    assert not silent_findings(warm, TIMING, RULES)[0].reproduced


def test_recompiles_on_every_call_count_the_calls_not_the_ops_dynamo_captured():
    counters = {"recompiles": {"step": 20}, "recompile_limit": 256, "stats": {"calls_captured": 400}}
    (finding,) = silent_findings({"calls": [], "calls_total": 21, "counters": counters}, (("recompilation", "recompiles"),), RULES)
    assert finding.reproduced  # 20 recompiles in 21 calls, far below the limit
    (unknown,) = silent_findings({"calls": [], "counters": counters}, (("recompilation", "recompiles"),), RULES)
    assert not unknown.reproduced  # without the calls, only the limit decides
    (rare,) = silent_findings({"calls": [], "calls_total": 500, "counters": counters}, (("recompilation", "recompiles"),), RULES)
    assert not rare.reproduced


def test_recompiles_up_to_the_limit_or_on_every_call():
    probe = {"calls": [], "counters": {"recompiles": {"step": 7}, "recompile_limit": 8, "stats": {"calls_captured": 20},
                                       "guard_failures": {"step": ["0/0: lr == 0.1"]}, "frames": {"total": 8}}}
    (finding,) = silent_findings(probe, (("recompilation", "recompiles"),), RULES)
    assert finding.reproduced and "`step` recompiled 7 time(s) (limit 8); first failing guard: `0/0: lr == 0.1`" in finding.summary
    calm = {"calls": [], "counters": {"recompiles": {"step": 1}, "recompile_limit": 8, "stats": {"calls_captured": 20}}}
    assert not silent_findings(calm, (("recompilation", "recompiles"),), RULES)[0].reproduced


def test_graph_breaks_the_script_asks_for_are_not_a_reproduction():
    # Dynamo's counters on the repro of pytorch#166176 (an explicit graph_break() and a disabled function)
    asked = {"counters": {"graph_breaks": 2, "graph_break_counts": [
        ["Call to `torch._dynamo.graph_break()`", 1], ["Skip calling `torch.compiler.disable()`d function", 1]]}}
    (finding,) = silent_findings(asked, (("graph_break", "graph_breaks"),), RULES)
    assert not finding.reproduced and finding.numbers["deliberate_graph_breaks"] == 2
    untraceable = {"counters": {"graph_breaks": 3, "graph_break_counts": [
        ["Call to `torch._dynamo.graph_break()`", 1], ["Data-dependent branching", 2]]}}
    (finding,) = silent_findings(untraceable, (("graph_break", "graph_breaks"),), RULES)
    assert finding.reproduced and finding.numbers["graph_breaks"] == 2 and "Data-dependent branching" in finding.summary


def test_a_failure_eager_shares_names_both_wordings():
    from bot.core.outcome import eager_shares_reason

    reason = eager_shares_reason("RuntimeError: kernel, c5.cpp:16, index out of bounds: tmp1 < 2L", "failed", "2.3.0",
                                 "2.13.0", "IndexError: index out of range in self")
    assert reason.code == "fails_without_compiler"
    assert "(eager: IndexError: index out of range in self; compiled: RuntimeError: kernel" in reason.sentence
    assert "the report used torch 2.3.0" in reason.sentence


def test_why_it_did_not_reproduce_from_the_exception():
    package = reason_from_exception({"type": "builtins.ModuleNotFoundError", "message": "No module named 'transformers'"}, RULES)
    assert package.code == "needs_package" and "`transformers`" in package.sentence
    assert reason_from_exception({"type": "builtins.ModuleNotFoundError", "message": "No module named 'torch'"}, RULES) is None
    data = reason_from_exception({"type": "builtins.OSError",
                                  "message": "We couldn't connect to 'https://huggingface.co' to load this file"}, RULES)
    assert data.code == "needs_data"
    snippet = reason_from_exception({"type": "builtins.NameError", "message": "name 'nn' is not defined"}, RULES)
    assert snippet.code == "incomplete_snippet" and "`nn`" in snippet.sentence


def test_an_option_or_function_of_another_torch_blocks_the_run_only_when_the_script_uses_it():
    option = {"type": "builtins.AttributeError", "message": "torch._inductor.config.lowmem_dropout does not exist"}
    script = "import torch._inductor.config as config\n@config.patch(lowmem_dropout=False)\ndef f(x): ...\n"
    blocked = blocking_reason(option, script, RULES)
    assert blocked.code == "torch_api_changed" and "`torch._inductor.config.lowmem_dropout`" in blocked.sentence
    assert blocking_reason(option, "torch.compile(f)(x)\n", RULES) is None  # raised by the compiler itself: a bug
    removed = {"type": "AttributeError", "message": "module 'torch._dynamo' has no attribute 'optimize_assert'"}
    assert blocking_reason(removed, "torch._dynamo.optimize_assert('eager')(f)\n", RULES).code == "torch_api_changed"
    moved = {"type": "ImportError", "message": "cannot import name 'aot_module_simplified' from 'torch._dynamo.backends'"}
    assert blocking_reason(moved, "from torch._dynamo.backends import aot_module_simplified\n", RULES) is not None
    assert reason_from_exception(option, RULES) is None  # a blocks rule speaks only through blocking_reason


def test_an_obvious_missing_import_is_added_once():
    script = '"""doc"""\nfrom __future__ import annotations\nclass M(nn.Module):\n    pass\n'
    fixed = with_obvious_import(script, "nn", RULES)
    assert fixed.split("\n")[2] == "import torch.nn as nn"
    assert with_obvious_import(fixed, "nn", RULES) is None  # already there
    assert with_obvious_import(script, "my_helper", RULES) is None  # not an obvious one
    assert missing_name({"type": "builtins.NameError", "message": "name 'F' is not defined"}) == "F"


def test_fixed_since_compares_the_reporters_torch_with_the_runners():
    reason = fixed_since("2.4.0+cu121", "2.13.0+cpu")
    assert reason.code == "fixed_since" and "the report used 2.4.0+cu121, so this may be fixed" in reason.sentence
    assert fixed_since("2.13.0", "2.13.0+cpu") is None
    assert "does not say which torch" in fixed_since(None, "2.13.0").sentence


def test_a_clean_run_always_has_a_reason():
    assert clean_run_reason("2.4.0", "2.13.0", reporter_gpu=True, ran_on="cpu").code == "needs_gpu"
    assert clean_run_reason("2.4.0", "2.13.0", reporter_gpu=False, ran_on="cpu").code == "fixed_since"
    same = clean_run_reason("2.13.0", "2.13.0+cpu", reporter_gpu=False, ran_on="cpu")
    assert same.code == "ran_clean" and "collect_env" in same.next_step


def test_notebook_only_repros():
    assert notebook_only("See my notebook: https://colab.research.google.com/drive/abc", None)
    assert notebook_only("", "%matplotlib inline\nimport torch\n")
    assert not notebook_only("", "import torch\n")


def test_a_run_that_raises_another_error_than_the_report_shows_did_not_reproduce_it():
    reason = reported_error_absent("RuntimeError", "aot_autograd_failure",
                                   "torch._dynamo.exc.Unsupported: Failed to trace builtin operator", "graph_break",
                                   "2.1.0", "2.13.0+cpu")
    assert reason.code == "fails_differently"
    assert "the report's RuntimeError (aot_autograd_failure) did not occur" in reason.sentence
    assert "Unsupported: Failed to trace builtin operator (graph_break)" in reason.sentence and "2.1.0" in reason.sentence
    # the same exception type, the same category, or a text that shows no complete exception: no verdict
    assert reported_error_absent("torch._dynamo.exc.Unsupported", "graph_break", "torch._dynamo.exc.Unsupported: x",
                                 "dynamo_internal_error", None, "2.13.0") is None
    assert reported_error_absent("RuntimeError", "graph_break", "Unsupported: x", "graph_break", None, "2.13.0") is None
    assert reported_error_absent("<traceback cut off>", "aot_autograd_failure", "Unsupported: x", "graph_break", None, "2.13") is None
    assert reported_error_absent(None, "accuracy", "IndexError: x", "runtime_crash", None, "2.13.0") is None


def test_an_error_outside_the_compiler_that_only_compiled_runs_show_is_the_compilers():
    from bot.core.outcome import COMPILED_ONLY_RULE, compiled_only, compiled_only_category
    from bot.core.records import Classification

    run = Classification("not_pt2", 0.8, "not_pt2|RuntimeError|view size is not compatible", is_pt2=False,
                         rule="eager_frames_only", exception_type="RuntimeError", unsure=True)
    table = RULES["compiled_only"]
    crash = compiled_only(run, compiled_only_category(None, table))
    assert (crash.category, crash.is_pt2, crash.rule, crash.unsure) == (table["category"], True, COMPILED_ONLY_RULE, False)
    assert crash.signature == f"{table['category']}|RuntimeError|view size is not compatible"
    assert compiled_only_category("accuracy", table) == "accuracy"  # the reporter called it a mismatch
    assert compiled_only_category("graph_break", table) == table["category"]  # a category the run cannot show
