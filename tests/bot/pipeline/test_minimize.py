"""Minimization with real torch: shrink while the failure keeps its category and signature."""
from __future__ import annotations

import ast
import json
import time
from dataclasses import replace

import pytest

from bot.core.source import tidy
from bot.pipeline.minimize import (COMPILER_OFF_ENV, CONFIRM_GRACE_S, CUT_FLOOR_S, MODULES_ENV, REPLAY_ENV, Minimizer,
                                   NotReproducible, env_key, same_failure, stance_reaches)
from bot.pipeline.reproduce import PROBE_ENV, export_entry
from bot.core.records import Classification
from runners.pool import WarmPool
from runners.reduce import Reducer
from runners.reduce.shape import shape_of
from runners.sandbox import RunResult, RunSpec, run
from tests import paths

LARGE = paths.REPROS / "large"


RESULT = RunResult(exit_code=1, signal=None, duration_s=1.0, peak_rss_bytes=None, stdout="", stderr="")


def verdict(category="graph_break", signature="graph_break|Unsupported|x", exception_type=None, evidence=1):
    from bot.core.records import Evidence
    return Classification(category, 0.9, signature, tuple(Evidence(1, "e") for _ in range(evidence)),
                          exception_type=exception_type)


def test_same_failure_needs_category_and_signature():
    target = verdict()
    assert same_failure(target, verdict(), "failed")
    assert not same_failure(target, verdict(signature="graph_break|Unsupported|y"), "failed")
    assert not same_failure(target, verdict(category="dynamic_shapes"), "failed")
    assert not same_failure(target, verdict(), "timeout")
    # a failure worded by the script's own check (Category.minimize_same): the category alone
    assert same_failure(target, verdict(signature="graph_break|Unsupported|y"), "failed", match="category")
    assert not same_failure(target, verdict(category="dynamic_shapes"), "failed", match="category")


def test_an_accuracy_repro_minimized_in_its_own_words_is_the_same_failure_and_its_test_expects_those():
    """The original's signature is its print ("max abs diff: N"), the minimized repro's is its
    check; with minimize_same: category they are one failure, and the regression test made from the
    minimized repro must fail with the minimized repro's signature."""
    from types import SimpleNamespace

    from bot.pipeline.minimize import MinimizeResult
    from bot.pipeline.triage import Triage
    from runners.reduce import ReduceStats
    original = verdict(category="accuracy", signature="accuracy|-|max abs diff: N")
    final = verdict(category="accuracy", signature="accuracy|-|AssertionError: Tensor-likes are not close!")
    result = MinimizeResult("src", original, final, ReduceStats(), checked_compiler_off=True, match="category")
    record = result.record()
    assert record.signature_preserved and record.final_signature == final.signature
    assert not MinimizeResult("src", original, final, ReduceStats()).same_failure  # by signature: another failure
    run = SimpleNamespace(classification=original, minimized=record)
    assert Triage.expected_failure(run).signature == final.signature
    assert Triage.expected_failure(SimpleNamespace(classification=original, minimized=None)) == original


def test_a_compiled_only_failure_is_the_same_failure_in_the_scripts_own_words():
    """The script's own `.view()` fails on a compiled output (outcome.compiled_only): a candidate's run
    says not PT2, with the same error; the candidate ran clean with the compiler off before that."""
    from bot.core.outcome import COMPILED_ONLY_RULE
    target = Classification("runtime_crash", 0.9, "runtime_crash|RuntimeError|view size", rule=COMPILED_ONLY_RULE)
    own = Classification("not_pt2", 0.8, "not_pt2|RuntimeError|view size", is_pt2=False)
    assert same_failure(target, own, "failed")
    assert not same_failure(target, replace(own, signature="not_pt2|RuntimeError|other"), "failed")
    assert not same_failure(target, own, "ok")
    assert not same_failure(replace(target, rule="raised_inside_inductor"), own, "failed")  # only a compiled-only target


def test_user_level_slippage_is_never_interesting():
    target = verdict(signature="unknown|NameError|x", category="unknown")
    assert not same_failure(target, verdict(signature="unknown|NameError|x", category="unknown",
                                            exception_type="NameError"), "failed")


def test_a_failure_judged_by_values_is_never_offered_random_tensors(classifier):
    """A random tensor inside a function called once compiled and once eager differs by the draw
    alone: for accuracy only deterministic tensors replace tensor-making calls."""
    minimizer = Minimizer(classifier, runner=None)
    script = "import torch\nprint(torch.compile(f)(torch.randn(8)))\n"
    offered = minimizer.replacements_for(verdict(category="accuracy", signature="accuracy|-|x"), script)
    assert offered and not any("randn" in text for text in offered)
    assert "torch.randn(1)" in minimizer.replacements_for(verdict(), script)
    assert minimizer.replacements_for(verdict(), "print(1)\n") == ()



def test_only_the_failures_a_branch_causes_keep_a_branch_on_the_input(classifier):
    minimizer = Minimizer(classifier, runner=None)
    kept = {category for category in classifier.ruleset.categories
            if minimizer.keeps_branch(verdict(category=category, signature=f"{category}|-|x"))}
    assert kept == {"graph_break", "export_failure", "dynamic_shapes"}


def test_tidy_lays_out_top_level_definitions():
    assert tidy("import torch\ndef f(x):\n    return x\nx = 1\ny = f(x)\n") == \
        "import torch\n\n\ndef f(x):\n    return x\n\n\nx = 1\ny = f(x)\n"
    assert tidy("f(*(x, 2), *rest)\n") == "f(x, 2, *rest)\n"  # what inlining `inputs` into `f(*inputs)` leaves


def test_tidying_the_result_never_drops_what_the_search_kept():
    """Deleting the unread field is the only tidying here, and it leaves a `forward` that ignores
    its input: the search's shape rule refused that edit, so the tidying may not make it either."""
    result = """import torch
class Gate(torch.nn.Module):
    def forward(self, x):
        self.seen = x.mean()
        return torch.ones(1).item()
torch.compile(Gate(), fullgraph=True)(torch.ones(1))
"""
    kept = shape_of(ast.parse(result))

    def keeps_shape(candidate: str) -> bool:
        return kept.kept_by(shape_of(ast.parse(candidate)))

    always = lambda _: True  # noqa: E731 (every candidate still fails the same way)
    assert "self.seen" not in Minimizer.tidied(result, always)
    assert Minimizer.tidied(result, always, keeps_shape) == tidy(result)


def test_a_layout_alone_needs_no_run_to_be_kept():
    """Blank lines change nothing a run could see, so the laid-out text is kept even when a run
    of it could not be afforded (a budget spent, a flaky check)."""
    result = "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.sum()\nnet = Net()\n"
    never = lambda _: False  # noqa: E731
    assert Minimizer.tidied(result, never) == tidy(result) != result
    assert Minimizer.tidied("f(*(x, 2))\n", never) == "f(*(x, 2))\n"  # a change of code: kept only after a run


ACCURACY = """\
import torch
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x) + 1


x = torch.randn(8)
torch.testing.assert_close(torch.compile(f)(x), f(x))
"""


@pytest.mark.slow
def test_an_accuracy_repro_must_keep_failing_only_with_the_compiler_on(classifier, pool):
    """`assert_close` fails with the same message whether or not torch.compile ran: a shrink that
    drops the compiled call would still "fail the same way" by its text, and is refused."""
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(ACCURACY)
    assert original.category == "accuracy"
    assert minimizer.needs_compiler_off_check(original, ACCURACY)
    eager_only = ACCURACY.replace("torch.compile(f)(x)", "torch.zeros(8)")
    assert minimizer.fails_same(original, eager_only)
    assert not minimizer.is_interesting(original, eager_only, check_compiler_off=True)
    assert minimizer.is_interesting(original, ACCURACY.replace("torch.randn(8)", "torch.ones(1)"), check_compiler_off=True)


@pytest.mark.slow
def test_a_candidate_broken_without_the_compiler_is_refused_before_anything_compiles(classifier, pool):
    """Most candidates are broken programs (an argument a call needs is gone): the compiler-off
    run, which compiles nothing, refuses them on its own."""
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(ACCURACY)
    assert minimizer.needs_compiler_off_check(original, ACCURACY)
    envs = []
    run = minimizer.classify_run
    minimizer.classify_run = lambda script, env=None, **kwargs: envs.append(env) or run(script, env, **kwargs)
    broken = ACCURACY.replace("torch.randn(8)", "torch.randn()")
    assert not minimizer.is_interesting(original, broken, check_compiler_off=True)
    assert envs == [COMPILER_OFF_ENV]
    assert minimizer.is_interesting(original, ACCURACY.replace("torch.randn(8)", "torch.ones(1)"), check_compiler_off=True)
    assert envs[1:] == [COMPILER_OFF_ENV, minimizer.backend_env]


FAILS_IN_EAGER_TOO = """\
import torch
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x):
    return torch.relu(x) + 1


torch.compile(f)(torch.randn(8)).sum().backward()
"""


@pytest.mark.slow
def test_where_eager_fails_otherwise_a_candidate_may_fail_there_only_the_same_way(classifier, pool):
    """Compiled, the script fails in Inductor; without the compiler it gets further and fails in
    `backward()` (nothing requires grad). A candidate may keep that eager failure or lose it, but
    not add one of its own: fresh_issues_10's flex-attention repro ended calling `.transpose()`
    with no arguments past the point Inductor fails, and its regression test failed in eager."""
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(FAILS_IN_EAGER_TOO)
    assert original.category == "backend_compiler_failed"
    assert not minimizer.needs_compiler_off_check(original, FAILS_IN_EAGER_TOO)
    assert "does not require grad" in minimizer.eager_failure.signature
    own_failure = FAILS_IN_EAGER_TOO.replace(".sum().backward()", ".transpose()")
    assert minimizer.fails_same(original, own_failure)  # compiled, it never gets that far
    assert not minimizer.is_interesting(original, own_failure, check_compiler_off=False)
    assert minimizer.is_interesting(original, FAILS_IN_EAGER_TOO.replace("randn(8)", "ones(1)"), check_compiler_off=False)
    assert minimizer.is_interesting(original, FAILS_IN_EAGER_TOO.replace(".sum().backward()", ""), check_compiler_off=False)


@pytest.mark.slow
def test_a_failure_that_eager_shares_is_not_checked_with_the_compiler_off(classifier, pool):
    script = ACCURACY.replace("torch.compile(f)(x)", "f(x) + 1")
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(script)
    assert original.category == "accuracy"  # by its text and the script's mention of Inductor
    assert not minimizer.needs_compiler_off_check(original, script)


@pytest.mark.slow
def test_the_triage_does_not_minimize_a_failure_that_eager_shares(classifier, pool):
    """pytorch#121251 on torch 2.13: the compiled index_select raises Inductor's bounds check where
    eager raises IndexError, the same refusal (ladder.yaml same_refusal). The triage's minimizer
    stops there: shrinking the code's own error would be time spent for no compiler bug."""
    script = ("import torch\n\n\ndef f(x):\n    return torch.index_select(x, 0, torch.tensor([2]))\n\n\n"
              "print(torch.compile(f)(torch.randn(2, 2)))\n")
    with pytest.raises(NotReproducible, match="fails the same way with the compiler off"):
        Minimizer(classifier, pool.run, stop_when_eager_shares=True).minimize(script)


def test_the_compiler_off_stance_reaches_torch_compile_in_any_spelling_and_never_export():
    for script in ("torch.compile(f)(x)", "@torch.compile\ndef f(x): ...", "model.compile()",
                   "from torch import compile\ncompile(f)", "torch._dynamo.optimize('eager')(f)"):
        assert stance_reaches(script), script
    for script in ("torch.export.export(m, (x,))", "torch._inductor.aoti_compile_and_package(ep)",
                   "torch._inductor.aot_compile(m, (x,))", "torch._export.aot_compile(m, (x,))"):
        assert not stance_reaches(script), script


def test_the_compiler_off_run_turns_export_and_aoti_into_the_module_itself():
    """Not the stance's reach, but the compiler-off run's (runners/_torch_probe.py _export_eagerly):
    where a script's own check fails only with them on, that run tells whose failure it is."""
    assert export_entry("pkg = torch._inductor.aoti_compile_and_package(ep)") == "aoti"
    assert export_entry("from torch._inductor import aoti_load_package\nm = aoti_load_package(p)") == "aoti"
    assert export_entry("ep = torch.export.export(m, (x,))") == "export"
    assert export_entry("from torch.export import export\nep = export(m, (x,))") == "export"
    assert export_entry("torch.compile(f)(x)") is None and export_entry("# we export results to csv") is None


def test_the_reserve_is_two_checks_on_the_candidates_backend_and_one_full_run(classifier):
    """After an 18 s Inductor run of the original, candidates on backend="eager" (1 s) with the
    compiler-off check (0.2 s): 2 x 2.2 + 19 s, not three 19 s runs. Once a candidate has been
    interesting, its run is the estimate of a check."""
    minimizer = Minimizer(classifier, run)
    minimizer.backend_env = {PROBE_ENV: json.dumps({"backend": "eager"})}
    minimizer.run_seconds = {env_key(minimizer.backend_env): 1.0, env_key(COMPILER_OFF_ENV): 0.2, env_key({}): 18.0}
    assert minimizer.reserve(18.0, check_compiler_off=True).seconds() == pytest.approx(2 * 2.2 + 19.0)
    assert minimizer.reserve(18.0, check_compiler_off=False).seconds() == pytest.approx(2 * 2.0 + 19.0)
    minimizer.backend_env = {}  # the candidates run on the script's own backend: the re-check's run is the final one
    reserve = minimizer.reserve(18.0, check_compiler_off=False)
    assert reserve.seconds() == pytest.approx(2 * 19.0)
    assert reserve.seconds((4.0, 6.0)) == pytest.approx(2 * 5.0)


def test_the_re_check_of_the_result_gets_a_whole_run_past_the_budget(classifier):
    """Candidate runs stop at the budget's end; the reducer's re-check of its result does not: an
    AOTInductor search (55 runs, each a package build) lost its result to four 5 s re-checks."""
    minimizer = Minimizer(classifier, run, timeout_s=120)
    minimizer.deadline = time.monotonic() - 1.0  # the budget is spent
    assert minimizer.run_timeout() == CONFIRM_GRACE_S
    minimizer.reducer = Reducer(lambda source: True)
    minimizer.reducer.confirming = True
    assert minimizer.run_timeout() == 120


def test_the_result_is_classified_by_its_re_check_when_that_ran_on_the_scripts_own_backend(classifier):
    """Candidates judged on the script's own backend (an Inductor-only failure, an AOTInductor
    package): the re-check of the result, in the cache no candidate wrote in, was the final
    classification's run already, and a second one would cost a whole compile (13 s for the
    package) of the budget. A run in the candidates' cache is not enough (see the cache test below)."""
    def no_run(spec):
        raise AssertionError("ran again")
    minimizer = Minimizer(classifier, no_run)
    original, shrunk = verdict(), verdict(signature="graph_break|Unsupported|shrunk")
    eager = {PROBE_ENV: json.dumps({"backend": "eager"})}
    for text in ["a"] * 2 + [str(i) for i in range(20)] + ["b"]:
        minimizer.recent.remember({}, text, shrunk, RESULT, clean_cache=True)
    minimizer.recent.remember(eager, "c", shrunk, RESULT, clean_cache=True)  # on backend="eager": not the script's own
    minimizer.recent.remember({}, "d", shrunk, RESULT)  # in the candidates' cache
    assert len(minimizer.recent) == 16 and minimizer.recent.get({}, "a") is None
    assert minimizer.verified_result("b", "script", original) == ("b", shrunk)
    assert minimizer.verified_result("script", "script", original) == ("script", original)  # nothing went
    for gone_or_elsewhere in ("a", "c", "d"):
        with pytest.raises(AssertionError, match="ran again"):
            minimizer.verified_result(gone_or_elsewhere, "script", original)
    assert minimizer.recent.of("c") == {eager[PROBE_ENV]: (shrunk, RESULT)}  # what the ladder may reuse


EXPORT_DATA_DEPENDENT = """\
import torch


class Top(torch.nn.Module):
    def forward(self, scores):
        keep = scores > 0.5
        count = keep.sum().item()
        if count > 2:
            return scores[:2]
        return scores


print(torch.export.export(Top(), (torch.rand(8),)))
"""


@pytest.mark.slow
def test_the_triage_minimizes_an_export_failure_the_compiler_off_stance_cannot_reach(classifier, pool):
    """torch.export ignores set_stance("force_eager"): run "with the compiler off" the script fails
    the same way, and the triage used to read that as the code's own failure and minimize no export
    failure at all. No compiler-off run is made for it, and candidates are not checked that way."""
    envs = []

    def recording_run(spec):
        envs.append(spec.env.get(PROBE_ENV))
        return pool.run(spec)

    minimizer = Minimizer(classifier, recording_run, budget_s=60, parallelism=2, stop_when_eager_shares=True)
    result = minimizer.minimize(EXPORT_DATA_DEPENDENT)
    assert result.original.category == "export_failure" and result.same_failure
    assert not result.checked_compiler_off
    assert COMPILER_OFF_ENV[PROBE_ENV] not in envs
    assert result.stats.tokens_after < result.stats.tokens_before


@pytest.mark.slow
def test_a_fullgraph_repro_runs_clean_with_the_compiler_off(classifier, pool):
    """The compiler goes off the ladder's way (set_stance("force_eager")): with Dynamo merely
    disabled, torch.compile(fullgraph=True) raises "found no compiled frames", and a graph break
    under fullgraph=True looked like a failure that eager shares."""
    script = ("import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x\n\n\n"
              "torch.compile(f, fullgraph=True)(torch.ones(3))\n")
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(script)
    assert original.category == "graph_break"
    assert minimizer.needs_compiler_off_check(original, script)


GRAPH_BREAK = ("import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x\n\n\n"
               "torch.compile(f, fullgraph=True)(torch.ones(3))\n")


def test_a_candidate_running_well_past_the_same_failure_is_cut_short(classifier, pool):
    """Once candidates have failed the same way in well under a second, one still running at
    CUT_FLOOR_S has got past the failure into work it never reaches (an AOTInductor candidate
    without the cause builds the whole package): it is stopped there, and is not interesting.
    The cut follows the slowest same-failure run of the search. The re-check of a result is never cut."""
    limits = []

    def runner(spec):
        limits.append(spec.timeout_s)
        return pool.run(spec)
    minimizer = Minimizer(classifier, runner, timeout_s=120)
    minimizer.deadline = time.monotonic() + 600
    original, _ = minimizer.classify_run(GRAPH_BREAK)
    assert minimizer.fails_same(original, GRAPH_BREAK.replace("3", "4"))  # a fast run that fails the same way
    assert limits == [120, 120]
    past_the_failure = "import time\nimport torch\n\ntorch.compile(lambda x: x + 1)(torch.ones(3))\ntime.sleep(60)\n"
    assert not minimizer.fails_same(original, past_the_failure)
    assert limits[-1] == CUT_FLOOR_S and minimizer.runs_cut == 1
    # where one same-failure run took 6 s (a package built anew), later fast ones (a build reused)
    # do not bring the cut down on a candidate that needs a new build
    minimizer.slowest_failing_s = 6.0
    assert minimizer.fails_same(original, GRAPH_BREAK.replace("3", "5"))
    assert minimizer.cut_after(120) == 18.0
    # the compiler-off check's own runs are cut the same way, after the slowest that passed it
    minimizer.slowest_off_s = 0.5
    assert not minimizer.runs_as_original_without_compiler(past_the_failure)
    assert limits[-1] == CUT_FLOOR_S and minimizer.runs_cut == 2
    assert minimizer.cut_after(120, off=True) == CUT_FLOOR_S and minimizer.cut_after(120) == 18.0
    minimizer.reducer = Reducer(lambda source: True)
    minimizer.reducer.confirming = True
    assert minimizer.cut_after(120) == 120 and minimizer.cut_after(120, off=True) == 120


RECOMPILES = """\
import torch
torch._dynamo.config.recompile_limit = 1
torch._dynamo.config.fail_on_recompile_limit_hit = True


def f(x, t):
    return x / t


for t in range(2):
    torch.compile(f, backend="eager")(torch.ones(1), t)
"""


@pytest.mark.slow
def test_a_recompile_repro_keeps_the_guard_that_fails(classifier, pool):
    """With `recompile_limit = 0` the first compile already hits the limit: the same error and
    signature, but no guard ever failed, so the user's recompile is gone from the repro."""
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_original(RECOMPILES)
    assert original.category == "recompilation"
    assert minimizer.fails_same(original, RECOMPILES.replace("range(2)", "(2, 3)"))
    degenerate = RECOMPILES.replace("recompile_limit = 1", "recompile_limit = 0")
    classification, _ = minimizer.classify_run(degenerate)
    assert same_failure(original, classification, "failed")
    assert not minimizer.fails_same(original, degenerate)


SPECIALIZED_DIM = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.reshape(4, 2)


torch.export.export(Net(), (torch.randn(8),), dynamic_shapes={"x": {0: torch.export.Dim("n")}})
"""


@pytest.mark.slow
def test_an_export_repro_keeps_the_code_that_specializes_its_dim(classifier, pool):
    """An example of size 1 makes export specialize the `Dim` too, with the same error line and
    signature; but that is export's 0/1 rule, another documented cause than the user's reshape."""
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_original(SPECIALIZED_DIM)
    assert original.category == "export_failure"
    assert minimizer.fails_same(original, SPECIALIZED_DIM.replace("reshape(4, 2)", "reshape(2, 4)"))
    size_one = SPECIALIZED_DIM.replace("reshape(4, 2)", "sum()").replace("randn(8)", "randn(1)")
    classification, _ = minimizer.classify_run(size_one)
    assert same_failure(original, classification, "failed")
    assert not minimizer.fails_same(original, size_one)


@pytest.mark.slow
def test_candidates_run_on_the_cheapest_backend_that_shows_the_failure(classifier, pool):
    """A graph break fails the same way with backend="eager" (Dynamo fails before any backend runs),
    so candidates pay no Inductor compile; an Inductor compile error shows only on Inductor."""
    graph_break = ("import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x\n\n\n"
                   "torch.compile(f, fullgraph=True)(torch.ones(3))\n")
    minimizer = Minimizer(classifier, pool.run)
    original, _ = minimizer.classify_run(graph_break)
    assert json.loads(minimizer.cheapest_backend_env(original, graph_break)[PROBE_ENV]) == {"backend": "eager"}
    compile_error = (paths.REPROS / "inductor_compile_error.py").read_text()
    original, _ = minimizer.classify_run(compile_error)
    assert original.category == "backend_compiler_failed"
    assert minimizer.cheapest_backend_env(original, compile_error) == {}
    named = graph_break.replace("fullgraph=True", 'fullgraph=True, backend="inductor"')
    assert minimizer.cheapest_backend_env(original, named) == {}  # a script that names its backend keeps it


@pytest.mark.slow
def test_the_reproductions_failure_is_not_compiled_again_when_a_cheaper_backend_shows_it(classifier, pool):
    """Given the reproduction's run, minimize checks the cheaper backends against it and starts
    there: the original is not compiled by Inductor once more. When no cheaper backend shows that
    failure (another signature, or an Inductor-only failure), the original runs as given."""
    from types import SimpleNamespace
    graph_break = ("import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x\n\n\n"
                   "torch.compile(f, fullgraph=True)(torch.ones(3))\n")
    envs = []

    def recording_run(spec):
        envs.append(spec.env.get(PROBE_ENV))
        return pool.run(spec)

    minimizer = Minimizer(classifier, recording_run)
    reproduced, run = minimizer.classify_run(graph_break)
    record = SimpleNamespace(classification=reproduced, status=run.status)
    envs.clear()
    original, _, backend_env = minimizer.original_failure(graph_break, record)
    assert original == reproduced and json.loads(backend_env[PROBE_ENV]) == {"backend": "eager"}
    assert None not in envs  # every run was on a cheaper backend, none with the script's own
    assert "Unsupported" in minimizer.original_output or "graph break" in minimizer.original_output.lower()

    other = SimpleNamespace(classification=verdict(signature=reproduced.signature + "!"), status="failed")
    envs.clear()
    original, _, backend_env = minimizer.original_failure(graph_break, other)
    assert backend_env is None and original.signature == reproduced.signature and None in envs
    compile_error = (paths.REPROS / "inductor_compile_error.py").read_text()
    shown, run = minimizer.classify_run(compile_error)
    original, _, backend_env = minimizer.original_failure(
        compile_error, SimpleNamespace(classification=shown, status=run.status))
    assert backend_env is None and original.category == "backend_compiler_failed"


@pytest.mark.slow
def test_a_compiled_only_failure_that_only_inductor_shows_is_kept_as_the_reproduction_found_it(classifier, pool):
    """The script's own check fails only under Inductor (no cheaper backend shows it): the original's
    run, an error outside the compiler, is the reproduction's compiled-only failure, not 'no PT2 error'."""
    from types import SimpleNamespace

    from bot.core.outcome import COMPILED_ONLY_RULE, compiled_only
    from tests.bot.pipeline.test_reproduce import OWN_CHECK_OF_AN_ACCURACY_BUG as script  # Inductor alone shows it
    minimizer = Minimizer(classifier, pool.run)
    raw, run = minimizer.classify_run(script)
    assert not raw.is_pt2  # the script's own AssertionError
    found = compiled_only(raw, "accuracy")
    original, _, backend_env = minimizer.original_failure(script, SimpleNamespace(classification=found, status=run.status))
    assert original.rule == COMPILED_ONLY_RULE and original.category == "accuracy" and backend_env is None


NESTED = """\
from dataclasses import dataclass
import torch
import torch.nn as nn


@dataclass
class Config:
    dim: int = 8


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg.dim, cfg.dim)

    def forward(self, x, mask):
        if mask.any():
            x = x.masked_fill(mask[..., None], 0.0)
        return self.proj(x)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(10, cfg.dim)
        self.layers = nn.ModuleList(Attention(cfg) for _ in range(2))
        self.head = nn.Linear(cfg.dim, 2)

    def forward(self, tokens, mask):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(x.mean(1))


def main():
    torch.manual_seed(0)
    model = Encoder(Config(dim=16))
    compiled = torch.compile(model, fullgraph=True)
    tokens = torch.randint(0, 10, (2, 5))
    compiled(tokens, tokens == 0).sum().backward()


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_the_module_where_the_failure_is_is_compiled_alone_first(classifier, pool):
    """An eager run records what each module of the script was given; the reducer starts from the
    innermost module compiled alone on tensors of those shapes, and the outer model is gone."""
    minimizer = Minimizer(classifier, pool.run, budget_s=120, parallelism=2)
    original, _ = minimizer.classify_original(NESTED)
    leaps = minimizer.hoisted(original, NESTED)
    assert leaps[0].splitlines()[-1] == ("torch.compile(Attention(Config(dim=16)), fullgraph=True)"
                                         "(torch.randn(2, 5, 16, requires_grad=True), torch.zeros(2, 5, dtype=torch.bool))")
    result = minimizer.minimize(NESTED)
    assert result.final.signature == result.original.signature
    assert result.stats.passes.get("hoist") == 1
    assert "Encoder" not in result.source and "Embedding" not in result.source
    assert shape_of(ast.parse(result.source)).input_branch, result.source


def test_no_module_is_hoisted_where_one_compiled_call_cannot_show_the_failure(classifier):
    """A slowdown shows in timings: no hoisted program shows it, so no recording run is spent on
    it. Nor on an accuracy failure unless candidates must run clean without the compiler: a
    hoisted check words the failure its own way, and only that run tells a compiler's difference
    from the check's."""
    def no_runs(spec):
        raise AssertionError("no run expected")

    minimizer = Minimizer(classifier, no_runs)
    for category in ("accuracy", "performance"):
        assert minimizer.hoisted(verdict(category=category), NESTED) == []
    assert minimizer.hoisted(verdict(), "import torch\ntorch.compile(print)(1)\n") == []  # no class to hoist


NESTED_ACCURACY = """import torch
import torch.nn as nn
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.proj(x))


class Net(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.embed = nn.Embedding(10, dim)
        self.drop = nn.Dropout(0.5)
        self.head = Head(dim)

    def forward(self, tokens):
        return self.head(self.drop(self.embed(tokens)))


def main():
    torch.manual_seed(0)
    model = Net()
    model.eval()
    tokens = torch.randint(0, 10, (4, 6))
    with torch.no_grad():
        expected = model(tokens)
        actual = torch.compile(model)(tokens)
    print("max diff:", (expected - actual).abs().max().item())
    assert torch.allclose(expected, actual, atol=1e-4), "compiled output differs from eager"


main()
"""


@pytest.mark.slow
def test_an_accuracy_failure_is_hoisted_as_the_module_checked_against_eager(classifier, pool):
    """The script's own check of the outer model's output words the failure ("compiled output
    differs"); the hoisted program checks the inner module compiled against eager, in eval mode
    and without grad as the script ran it, and counts as the same failure (the category; every
    candidate also runs clean with the compiler off)."""
    minimizer = Minimizer(classifier, pool.run, budget_s=150, parallelism=2)
    result = minimizer.minimize(NESTED_ACCURACY)
    assert result.original.category == result.final.category == "accuracy" and result.checked_compiler_off
    assert result.stats.passes.get("hoist") == 1, result.source
    assert "Embedding" not in result.source and "Dropout" not in result.source
    assert "torch.testing.assert_close(torch.compile(" in result.source, result.source
    assert "rtol=1e-05, atol=0.0001)" in result.source, result.source  # allclose's, as the script checked


@pytest.mark.slow
def test_the_recording_run_stops_at_the_entry_point_without_compiling(pool):
    """The record needs only the eager calls up to the entry point: an export (and an AOTInductor
    build after it) never runs, and nothing after the entry point does."""
    script = ("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x, scale=2.0):\n"
              "        return x.relu() * scale\n\n\nx = torch.ones(2, 3, dtype=torch.float16)\ntorch._dynamo.mark_dynamic(x, 0)\n"
              "ep = torch.export.export(Net(), (x,))\n"
              "print('exported')\ntorch._inductor.aoti_compile_and_package(ep)\n")
    result = pool.run(RunSpec(script=script, env=MODULES_ENV))
    assert result.status == "ok" and "exported" not in result.stdout
    assert result.probe["modules"] == [{"class": "Net", "init": [], "init_kw": {}, "call": [
        {"tensor": [2, 3], "dtype": "float16", "device": "cpu", "grad": False, "dynamic": [0]}],
        "at_entry": {"training": True, "grad": True}}]


@pytest.mark.slow
def test_the_recording_run_for_a_failure_across_calls_records_the_compiled_modules_calls(pool):
    """A recompile needs the calls (their shapes change), so that run goes on eagerly through the
    compiled module's calls and records each; other compiled callables are run, not recorded."""
    script = ("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, xs):\n"
              "        return sum(x.sum() for x in xs)\n\n\nnet = torch.compile(Net())\nhelper = torch.compile(torch.sin)\n"
              "for n in (1, 2, 3):\n    helper(torch.ones(2))\n    net([torch.ones(4)] * n)\nprint('done')\n")
    result = pool.run(RunSpec(script=script, env=REPLAY_ENV))
    assert result.status == "ok" and "done" in result.stdout
    one = {"tensor": [4], "dtype": "float32", "device": "cpu", "grad": False}
    assert result.probe["entry"] == {"class": "Net", "calls": [[{"seq": "list", "items": [one] * n}] for n in (1, 2, 3)]}


@pytest.fixture(scope="module")
def pool():
    with WarmPool(2) as warm:
        yield warm


@pytest.mark.slow
@pytest.mark.nightly  # minutes of minimizing a 40-60 line model; CI runs the shorter cases
def test_transformer_with_an_item_branch_reduces_to_what_a_maintainer_would_write(classifier, pool):
    """63 lines (embedding, attention, a ModuleList of blocks) down to at most 8 code lines that
    still pass a tensor into compiled code that branches on `.item()` of it."""
    script = (LARGE / "transformer_item_branch.py").read_text()
    result = Minimizer(classifier, pool.run, budget_s=500, parallelism=2).minimize(script)
    assert result.final.signature == result.original.signature
    code_lines = [line for line in result.source.splitlines() if line.strip()]
    assert len(code_lines) <= 8, result.source
    assert "item()" in result.source and "fullgraph=True" in result.source
    facts = shape_of(ast.parse(result.source))
    assert facts.tensor_input and facts.input_branch and not facts.number_input, result.source
    assert result.stats.tokens_after < result.stats.tokens_before / 5


@pytest.mark.slow
@pytest.mark.nightly  # minutes of minimizing a 40-60 line model; CI runs the shorter cases
def test_conv_training_step_with_a_compile_error_reduces_to_the_relu(classifier, pool):
    script = (LARGE / "conv_training_compile_error.py").read_text()
    result = Minimizer(classifier, pool.run, budget_s=600, parallelism=2).minimize(script)
    assert result.original.category == "backend_compiler_failed"
    assert result.final.signature == result.original.signature
    assert "relu" in result.source and "inject_relu_bug_TESTING_ONLY" in result.source
    assert "optim" not in result.source and "cross_entropy" not in result.source and "Conv2d" not in result.source
    code_lines = [line for line in result.source.splitlines() if line.strip()]
    assert len(code_lines) <= 12, result.source


@pytest.mark.slow
def test_a_script_that_passes_cannot_be_minimized(classifier):
    with pytest.raises(NotReproducible):
        Minimizer(classifier, run, budget_s=30).minimize("import torch\nprint(torch.compile(lambda x: x + 1)(torch.ones(1)))\n")
