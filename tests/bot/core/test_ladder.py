"""The ablation ladder's decisions, as plain values: which rung owns a failure, and what it re-files to."""
from bot.core import ladder
from bot.core.ladder import FAILS, FAILS_DIFFERENTLY, PASSES, Observed, RungResult
from bot.core.ruleset import load_ruleset

TABLE = load_ruleset().ladder
RUNG = {r.id: r for r in TABLE.rungs + TABLE.switches}
BACKEND_ERROR = Observed("error", True, "backend_compiler_failed", "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised")


def results(**outcomes) -> tuple[RungResult, ...]:
    return tuple(RungResult(rung, RUNG[rung].title, outcome) for rung, outcome in outcomes.items())


def test_the_first_rung_that_fails_the_same_way_owns_the_failure():
    verdict = ladder.decide(TABLE, results(no_compiler=PASSES, eager=PASSES, aot_eager=FAILS,
                                           aot_eager_decomp_partition=FAILS, inductor=FAILS), "backend_compiler_failed")
    assert (verdict.layer, verdict.owner, verdict.cheapest_backend) == ("aot_autograd", "AOTAutograd", "aot_eager")
    assert verdict.category == "aot_autograd_failure"  # a "backend" failure that aot_eager shows is AOTAutograd's
    assert "Re-filed from backend_compiler_failed to aot_autograd_failure" in verdict.sentence


def test_failing_only_with_inductor_keeps_an_inductor_category():
    verdict = ladder.decide(TABLE, results(no_compiler=PASSES, eager=PASSES, aot_eager=PASSES,
                                           aot_eager_decomp_partition=PASSES, inductor=FAILS), "accuracy")
    assert (verdict.owner, verdict.category, verdict.cheapest_backend) == ("Inductor", "accuracy", "inductor")


def test_an_error_the_scripts_own_code_raises_only_compiled_is_named_by_the_layer_that_owns_it():
    """`autograd.grad` failing on a compiled model's outputs (fresh_issues_13): the compiled-only rule's
    default, runtime_crash, is AOTAutograd's failure once aot_eager is the first rung to show it; an
    Inductor-owned one (a `.view()` on outputs with other strides) stays a run-time failure."""
    aot = results(no_compiler=PASSES, eager=PASSES, aot_eager=FAILS, aot_eager_decomp_partition=FAILS, inductor=FAILS)
    assert ladder.decide(TABLE, aot, "runtime_crash", compiled_only=True).category == "aot_autograd_failure"
    assert ladder.decide(TABLE, aot, "runtime_crash").category == "runtime_crash"  # a crash AOTAutograd's code caused
    inductor = results(no_compiler=PASSES, eager=PASSES, aot_eager=PASSES, aot_eager_decomp_partition=PASSES, inductor=FAILS)
    assert ladder.decide(TABLE, inductor, "runtime_crash", compiled_only=True).category == "runtime_crash"


def test_failing_with_the_compiler_off_is_the_codes_own_error():
    verdict = ladder.decide(TABLE, results(no_compiler=FAILS, eager="not_run"), "dynamo_internal_error")
    assert (verdict.layer, verdict.category) == ("eager", "not_pt2")


def test_side_switches_that_pass_are_workarounds_and_own_nothing():
    verdict = ladder.decide(TABLE, results(no_compiler=PASSES, eager=FAILS, no_fullgraph=PASSES), "graph_break")
    assert verdict.owner == "Dynamo" and verdict.workarounds == ("fullgraph=False",)


def test_no_rung_failing_says_so_instead_of_guessing():
    verdict = ladder.decide(TABLE, results(no_compiler=PASSES, eager=PASSES, inductor=PASSES), "runtime_crash")
    assert verdict.layer is None and "no rung" in verdict.sentence


def test_a_rung_fails_the_same_way_by_category_or_exception_type():
    other = Observed("error", True, "aot_autograd_failure", "torch._dynamo.exc.BackendCompilerFailed: backend='aot_eager' raised")
    assert ladder.rung_outcome(RUNG["aot_eager"], BACKEND_ERROR, other) == FAILS  # same exception type
    unrelated = Observed("error", True, "not_pt2", "ValueError: bad")
    assert ladder.rung_outcome(RUNG["aot_eager"], BACKEND_ERROR, unrelated) == FAILS_DIFFERENTLY
    assert ladder.rung_outcome(RUNG["aot_eager"], BACKEND_ERROR, Observed("ok", False)) == PASSES
    assert ladder.rung_outcome(RUNG["aot_eager"], BACKEND_ERROR, Observed("timeout", True)) == "timeout"


def test_eager_shares_an_error_that_dynamo_wrapped_while_tracing():
    compiled = Observed("error", True, "dynamo_internal_error",
                        "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors: "
                        "call_function <built-in function linear>: got RuntimeError('mat1 and mat2 shapes cannot be multiplied (4x3 and 4x4)')")
    eager = Observed("error", True, "not_pt2", "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x4)")
    assert ladder.rung_outcome(RUNG["no_compiler"], compiled, eager) == FAILS
    unrelated = Observed("error", True, "not_pt2", "AssertionError: counters differ")
    assert ladder.rung_outcome(RUNG["no_compiler"], compiled, unrelated) == FAILS_DIFFERENTLY


def test_the_same_refusal_worded_by_eager_and_by_the_compiled_code_is_shared():
    # torch 2.13 on the repro of pytorch#121251: Inductor's bounds check where eager raises IndexError
    compiled = Observed("error", True, "runtime_crash",
                        "RuntimeError: kernel, /tmp/c5.main.cpp:16, index out of bounds: tmp1 < 2L")
    eager = Observed("error", True, "not_pt2", "IndexError: index out of range in self")
    assert ladder.rung_outcome(RUNG["no_compiler"], compiled, eager, TABLE.same_refusal) == FAILS
    assert ladder.rung_outcome(RUNG["no_compiler"], compiled, eager) == FAILS_DIFFERENTLY  # without the table
    unrelated = Observed("error", True, "not_pt2", "ValueError: expected a float")
    assert ladder.rung_outcome(RUNG["no_compiler"], compiled, unrelated, TABLE.same_refusal) == FAILS_DIFFERENTLY


def test_a_silent_failure_is_judged_by_its_comparison():
    goal = Observed("ok", False, "accuracy")
    assert ladder.rung_outcome(RUNG["aot_eager"], goal, Observed("ok", False, silent_differs=True)) == FAILS
    assert ladder.rung_outcome(RUNG["aot_eager"], goal, Observed("ok", False, silent_differs=False)) == PASSES
    assert ladder.probe_for(RUNG["aot_eager"], TABLE, "accuracy") == {"backend": "aot_eager", "compare": True}
    assert ladder.probe_for(RUNG["no_compiler"], TABLE, "accuracy") == {"compiler": "off"}


def test_the_plan_adds_switches_the_code_or_category_calls_for():
    script = "import torch\nf = torch.compile(g, fullgraph=True, dynamic=True)\n"
    planned = [r.id for r in ladder.plan(TABLE, script, "graph_break")]
    assert planned[:5] == ["no_compiler", "eager", "aot_eager", "aot_eager_decomp_partition", "inductor"]
    assert set(planned[5:]) == {"static_shapes", "no_fullgraph"}
    assert [r.id for r in ladder.plan(TABLE, "import torch\ntorch.compile(g)\n", "backend_compiler_failed")][5:] == []


def test_the_ladder_needs_a_torch_compile_call_to_switch():
    assert ladder.not_applicable(TABLE, "import torch\ntorch.export.export(m, (x,))\n", "export_failure", True)
    assert ladder.not_applicable(TABLE, "import torch\ntorch.compile(m)(x)\n", "performance", False)  # a measurement
    assert ladder.not_applicable(TABLE, "import torch\ntorch.compile(m)(x)\n", "accuracy", False) is None
    assert ladder.not_applicable(TABLE, None, "accuracy", True)


def test_a_comment_or_a_string_naming_torch_compile_is_not_a_call():
    script = '# about: no torch.compile anywhere\nimport torch\nprint("torch.compile(f)")\n'
    assert ladder.not_applicable(TABLE, script, "runtime_crash", True)
    assert ladder.not_applicable(TABLE, "import torch\nf = torch._dynamo.optimize('eager')(g)\n", "runtime_crash", True) is None


def test_a_side_switch_runs_on_the_backend_of_the_rung_that_owns_the_failure():
    owner = ladder.owning_rung(TABLE, results(no_compiler=PASSES, eager=FAILS, aot_eager=FAILS))
    assert owner is RUNG["eager"]
    assert ladder.switch_probe(RUNG["no_fullgraph"], owner, TABLE, "graph_break") == {"fullgraph": False, "backend": "eager"}
    inductor = ladder.owning_rung(TABLE, results(no_compiler=PASSES, eager=PASSES, aot_eager=PASSES,
                                                 aot_eager_decomp_partition=PASSES, inductor=FAILS))
    assert ladder.switch_probe(RUNG["static_shapes"], inductor, TABLE, "dynamic_shapes")["backend"] == "inductor"


def test_no_side_switch_runs_when_the_code_fails_without_the_compiler_and_the_repros_backend_without_an_owner():
    assert ladder.switch_probe(RUNG["no_fullgraph"], RUNG["no_compiler"], TABLE, "graph_break") is None
    assert ladder.switch_probe(RUNG["no_fullgraph"], None, TABLE, "graph_break") == {"fullgraph": False}
    assert ladder.switch_probe(RUNG["no_fullgraph"], None, TABLE, "accuracy") == {"fullgraph": False, "compare": True}


def test_the_cheaper_rungs_a_failure_may_show_on_are_those_whose_layer_can_fail_that_way():
    assert [r.id for r in ladder.cheaper_rungs(TABLE, "graph_break")] == ["eager"]
    assert [r.id for r in ladder.cheaper_rungs(TABLE, "aot_autograd_failure")] == ["aot_eager", "aot_eager_decomp_partition"]
    assert ladder.cheaper_rungs(TABLE, "triton_kernel_bug") == ()


def test_a_rung_above_one_that_fails_the_same_way_need_not_run():
    done = {r.rung: r for r in results(no_compiler=PASSES, eager=FAILS)}
    assert [r.id for r in TABLE.rungs if ladder.owned_below(TABLE, done, r)] == [
        "aot_eager", "aot_eager_decomp_partition", "inductor"]
    failing_off = {r.rung: r for r in results(no_compiler=FAILS)}  # the code's own error: nothing else matters
    assert all(ladder.owned_below(TABLE, failing_off, r) for r in TABLE.rungs[1:])
    differently = {r.rung: r for r in results(no_compiler=PASSES, eager=FAILS_DIFFERENTLY)}
    assert not any(ladder.owned_below(TABLE, differently, r) for r in TABLE.rungs)
