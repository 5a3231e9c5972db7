"""The generic reducer: shrink Python source while a predicate holds."""
from __future__ import annotations

import ast
import contextlib
import io
import itertools
import random
import threading
import time
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.reduce import Reducer, Reserve, bad_calls, count_tokens, dangling_attributes, reduce_source, unbound_names

PROGRAM = '''
import math, os
import torch

def helper(a, b=3):
    return a * b

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))

    def forward(self, x):
        for i in range(10):
            x = x + helper(i)
        if x.sum() > 0:
            y = torch.special_thing(x, dim=1, keepdim=True)
        return self.layers(x)

x = torch.randn(128, 64)
print(Model()(x))
'''


def test_reduces_to_what_the_predicate_needs():
    result = reduce_source(PROGRAM, lambda s: "special_thing" in s and "randn(" in s)
    assert "special_thing" in result.source and "randn(" in result.source
    assert result.stats.tokens_after < result.stats.tokens_before / 5
    assert result.stats.stop_reason.startswith("fixpoint")
    ast.parse(result.source)
    # where the predicate calls went, per pass, adds up to the whole search (the final re-check aside)
    assert sum(result.stats.pass_runs.values()) == result.stats.runs - 2 and result.stats.pass_runs["statement"] > 0
    assert set(result.stats.pass_seconds) == set(result.stats.pass_runs)
    # how the size fell: one step per accepted edit, none larger or earlier than the one before
    steps = result.stats.progress
    assert len(steps) == result.stats.accepted and steps[-1][2] == result.stats.tokens_after < steps[0][2]
    assert all(a[2] >= b[2] and a[1] <= b[1] and a[0] <= b[0] for a, b in zip(steps, steps[1:]))
    assert {step[3] for step in steps} == set(result.stats.passes)


def test_shrinks_tensor_shapes_and_loop_counts():
    def holds(source: str) -> bool:
        tree = ast.parse(source)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "randn"]
        return bool(calls) and len(calls[0].args) == 4
    result = reduce_source("import torch\nx = torch.randn(64, 3, 224, 224)\nfor i in range(100):\n    pass\n", holds)
    assert result.source == "import torch\ntorch.randn(1, 1, 1, 1)\n"  # the import stays: torch is read


def test_one_size_written_in_two_places_shrinks_in_both_at_once():
    """`Net(64)` with `torch.randn(64)`: shrinking either alone is a shape mismatch."""
    source = "import torch\nnet = Net(64)\nx = torch.randn(64)\nshow(net, x)\n"

    def same_size(text: str) -> bool:
        tree = ast.parse(text)
        sizes = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, int)]
        return len(sizes) == 2 and sizes[0] == sizes[1] and "show(net, x)" in text and "= Net(" in text and "= torch.randn(" in text
    result = reduce_source(source, same_size)
    assert "Net(1)" in result.source and "torch.randn(1)" in result.source, result.source


def test_a_closeness_checks_tolerance_is_kept_as_the_script_states_it():
    """Shrunk to 0 or dropped (assert_close's tighter default), float noise between compiled and
    eager would pass for the bug; the compiler-off run, eager against itself, cannot tell."""
    source = "import torch\nx = torch.randn(64)\ntorch.testing.assert_close(f(x), g(x), rtol=0.0001, atol=0.05)\n"
    result = reduce_source(source, lambda text: "assert_close(f(x), g(x)" in text and "randn" in text)
    assert result.source.endswith("assert_close(f(x), g(x), rtol=0.0001, atol=0.05)\n"), result.source
    assert "torch.randn()" in result.source  # other arguments still go


def test_a_call_is_never_replaced_by_its_callee():
    """`show(torch.randn(2))` -> `show(torch.randn)` still satisfies a predicate that accepts a
    callable, but passes a function where the repro had a value: nobody could read that repro."""
    source = "import torch\n\ndef show(v):\n    print(callable(v) or hasattr(v, 'shape'))\n\n\nshow(torch.randn(2))\n"
    result = reduce_source(source, prints("True\n"))
    assert "torch.randn)" not in result.source and "randn(" in result.source, result.source


def test_a_candidate_reading_a_name_nothing_binds_is_never_run():
    source = "import torch\n\ndef make(n):\n    return torch.randn(n)\n\nclass Unused:\n    pass\nx = make(8)\nprint(x)\n"
    tried = []
    result = reduce_source(source, lambda s: tried.append(s) or "print(" in s)
    assert not any(unbound_names(ast.parse(candidate)) for candidate in tried)  # e.g. `make` deleted, still called
    assert result.stats.sure_failures_skipped > 0
    assert "print(" in result.source


def test_names_the_original_reads_unbound_may_stay_unbound():
    result = reduce_source("import os\nprint(undefined_thing)\nx = 1\n", lambda s: "undefined_thing" in s)
    assert result.source == "undefined_thing\n"


def test_a_candidate_reading_a_self_attribute_its_class_no_longer_sets_is_never_run():
    source = ("class Net:\n    def __init__(self):\n        self.scale = 2\n        self.unused = 3\n\n"
              "    def forward(self, x):\n        return x * self.scale\n\nprint(Net().forward(1))\n")
    tried = []
    result = reduce_source(source, lambda s: tried.append(s) or "x * self.scale" in s and "Net().forward(" in s)
    assert not any(dangling_attributes(ast.parse(candidate)) for candidate in tried)
    assert "self.unused" not in result.source and "self.scale" in result.source


def test_dangling_attributes_are_reads_a_class_never_stores_or_defines():
    source = ("class M(Base):\n    def __init__(self):\n        self.a = 1\n"
              "    def forward(self, x):\n        return self.a + self.b + self.helper(x)\n"
              "    def helper(self, x):\n        return x\n")
    assert dangling_attributes(ast.parse(source)) == {"M.b"}  # maybe from Base: allowed when the original reads it too
    assert dangling_attributes(ast.parse(source.replace("self.a = 1", "setattr(self, 'b', 1)"))) == set()


def prints(expected: str):
    """A semantic predicate: the program runs and prints exactly `expected`."""
    def predicate(source: str) -> bool:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # candidates such as `100(21)` warn when compiled
                exec(compile(source, "<candidate>", "exec"), {"__name__": "__main__"})
        except Exception:
            return False
        return out.getvalue() == expected
    return predicate


def test_a_function_called_once_is_inlined_into_its_caller():
    source = "def scale(x, factor=2):\n    y = x * factor\n    return y + 1\n\n\nprint('result', scale(20))\n"
    result = reduce_source(source, prints("result 41\n"))
    assert "def " not in result.source and prints("result 41\n")(result.source)
    assert result.stats.passes.get("inline")


def test_an_assignment_nothing_reads_keeps_only_the_call_that_fails():
    """fresh_issues_10's export repro ended with `() = rope_tables(T)`: the call is what fails
    (an lru_cache hashing a SymInt), and its unpacked results were dropped one target at a time."""
    def raises_value_error_3(source: str) -> bool:
        try:
            exec(compile(source, "<candidate>", "exec"), {})
        except ValueError as error:
            return error.args == (3,) and "tables(3)" in source
        except Exception:
            return False
        return False
    source = "def tables(n):\n    raise ValueError(n)\n\n\ncos, sin = tables(3)\nprint(cos)\n"
    result = reduce_source(source, raises_value_error_3)
    assert result.source.splitlines()[-1] == "tables(3)", result.source


def test_a_method_called_once_through_self_is_inlined_and_loses_the_parameters_it_ignores():
    """The detector's `self.postprocess(boxes, scores)` in `forward`: the method's body moves to
    its one call and the unread `boxes` goes with its argument (fresh_issues_3's export report)."""
    source = ("class Head:\n    def forward(self, images):\n        return self.postprocess(images * 2, images)\n\n"
              "    def postprocess(self, boxes, scores):\n        kept = scores + 1\n        return kept * 10\n\n\n"
              "print(Head().forward(4))\n")
    result = reduce_source(source, keeps_a_class(prints("50\n")))
    assert "postprocess" not in result.source and "boxes" not in result.source, result.source
    assert result.stats.passes.get("inline")
    assert "Head().forward(4)" in result.source


def keeps_a_class(predicate):
    """`predicate`, and the program still defines a class: what compiling an `nn.Module` needs, which
    these pure-Python stand-ins do not (else the class pass dissolves them into functions)."""
    return lambda source: "\nclass " in "\n" + source and predicate(source)


def _applied(source: str, edits) -> list[str]:
    """The programs each of `edits(tree)`'s edits makes of `source` (those that apply)."""
    made = []
    for _, edit in edits(ast.parse(source)):
        tree = ast.parse(source)
        if edit(tree):
            made.append(ast.unparse(tree))
    return made


def test_a_method_called_only_through_self_can_drop_a_parameter_at_every_call():
    from runners.reduce.rewrites import parameter_edits

    source = ("class Head:\n    def forward(self, x):\n        return self.post(x, 1) + self.post(x, scale=2)\n\n"
              "    def post(self, x, scale=3):\n        return x * scale\n")
    made = _applied(source, parameter_edits)
    assert any("self.post(x) + self.post(x)" in m and "def post(self, x):" in m for m in made), made
    used_elsewhere = source + "\n\nhook = Head().post\n"
    assert not any("def post(self, x):" in m for m in _applied(used_elsewhere, parameter_edits))


def test_a_wrapper_layer_is_replaced_by_the_layer_it_builds():
    source = ("class Doubler:\n    def __init__(self, k):\n        self.k = k\n\n    def __call__(self, x):\n"
              "        return x * self.k\n\n\nclass Net:\n    def __init__(self, k=2):\n        self.layer = Doubler(k)\n"
              "        self.bias = 100\n\n    def __call__(self, x):\n        return self.layer(x) + 0\n\n\nprint(Net()(21))\n")
    result = reduce_source(source, keeps_a_class(prints("42\n")))
    assert "class Net" not in result.source and "class Doubler" in result.source, result.source
    assert result.stats.passes.get("instances")  # then `self.k` became the 2 `Doubler(2)` gave it


def test_calls_that_do_not_fit_their_definition_are_sure_failures():
    source = ("def f(a, b=1, *, c):\n    return a\n\nclass Net:\n    def __init__(self, width):\n        pass\n\n"
              "f(1, c=2)\nf(1, 2, c=3)\nNet(4)\n")
    assert bad_calls(ast.parse(source)) == set()
    for call, name in (("f(1)", "f"), ("f(1, 2, 3, c=4)", "f"), ("f(1, c=2, d=3)", "f"), ("Net()", "Net"), ("Net(1, 2)", "Net")):
        assert bad_calls(ast.parse(source + call + "\n")) == {name}, call
    assert bad_calls(ast.parse(source + "f(*args)\nNet(**kw)\n")) == set()  # cannot tell
    tried = []
    reduce_source(source, lambda s: tried.append(s) or "f(" in s)
    assert not any(bad_calls(ast.parse(candidate)) for candidate in tried)


def test_unbound_names_follow_python_scopes():
    assert unbound_names(ast.parse("class A:\n    y = 1\n    def f(self):\n        return y\n")) == {"y"}  # class body is no closure
    assert unbound_names(ast.parse("def f(a=b):\n    return [i for i in a] + g(lambda q: q + z)\n")) == {"b", "g", "z"}
    assert unbound_names(ast.parse("def outer():\n    v = 1\n    def inner(x: Foo) -> Bar:\n        return v + x\n")) == set()
    assert unbound_names(ast.parse("import torch.nn as nn, os.path\ntry:\n    pass\nexcept E as e:\n    print(e, os, nn, torch)\n")) == {"E", "torch"}
    assert unbound_names(ast.parse("from m import *\nx = y\n")) is None  # a star import hides what is bound


def test_the_caller_can_tell_the_re_check_of_the_result_from_the_search():
    """A caller that cuts runs short at the budget's end lets the re-check finish (see
    Minimizer.run_timeout): cut short, it reads as a flaky predicate and the result is lost."""
    seen = []

    def interesting(source: str) -> bool:
        seen.append((reducer.confirming, source))
        return prints("result 41\n")(source)

    reducer = Reducer(interesting)
    result = reducer.reduce("x = 20\nprint('result', x * 2 + 1)\n")
    confirming = [source for during_check, source in seen if during_check]
    assert confirming == [result.source] and seen[-1] == (True, result.source)
    assert not any(during_check for during_check, _ in seen[:-1]) and not reducer.confirming


def test_never_interesting_returns_the_original_and_says_why():
    result = reduce_source(PROGRAM, lambda s: False)
    assert result.source == PROGRAM
    assert result.stats.stop_reason == "the original is not interesting: nothing to preserve"
    assert result.stats.runs == 1


def test_always_interesting_reduces_to_nearly_nothing():
    result = reduce_source(PROGRAM, lambda s: True)
    assert result.stats.tokens_after <= 2
    assert result.stats.stop_reason.startswith("fixpoint")


def test_budget_runs_out_and_best_so_far_is_returned():
    def slow(source: str) -> bool:
        time.sleep(0.02)
        return "special_thing" in source
    result = reduce_source(PROGRAM, slow, budget_s=0.3)
    assert result.stats.stop_reason == "budget: time ran out"
    assert "special_thing" in result.source
    assert len(result.source) <= len(PROGRAM)


def test_the_search_leaves_its_reserve_for_the_runs_after_it():
    """Reserve(checks, check_s, tail_s): the search stops checks x (check + 1 s) + tail_s before
    the budget's end, so the re-check of its result and the caller's final runs fit in the budget."""
    def slow(source: str) -> bool:
        time.sleep(0.05)
        return "special_thing" in source
    started = time.monotonic()
    result = Reducer(slow, budget_s=3.0, reserve=Reserve(checks=1, check_s=0.0, tail_s=1.0)).reduce(
        PROGRAM, known_interesting=True)
    assert result.stats.stop_reason == "budget: time ran out"
    assert time.monotonic() - started < 1.6  # 3 s less 2 s, plus the candidates in flight and the re-check
    assert "special_thing" in result.source


def test_a_check_is_estimated_by_the_latest_interesting_candidate_once_there_is_one():
    """Before the search a check can only be estimated by the original's run (cold: 13 s where a
    warm candidate takes 3 s). That estimate leaves no search here; the same budget, once a
    candidate has been interesting, searches on."""
    def quick(source: str) -> bool:
        time.sleep(0.05)  # 31 runs to the fixpoint: 1.5 s, more than the 1 s the first estimate leaves
        return "special_thing" in source
    reserve = Reserve(checks=1, check_s=10.0, tail_s=0.0)
    assert Reducer(quick, budget_s=10.0, reserve=reserve).reduce(PROGRAM, known_interesting=True).stats.stop_reason \
        == "budget: none left to test the original (the runs before the search used it)"
    reducer = Reducer(quick, budget_s=12.0, reserve=reserve)
    result = reducer.reduce(PROGRAM, known_interesting=True)
    assert result.stats.stop_reason.startswith("fixpoint") and result.stats.wall_s > 1.0
    assert reducer.recent_interesting_s and max(reducer.recent_interesting_s) < 1.0
    assert reserve.seconds() == 11.0 and reserve.seconds((0.9, 0.5, 0.7)) == 1.5


def test_a_search_the_caller_stops_ends_at_once_without_re_checking_its_result():
    """`stop` (a minimize cancelled because the reproduction showed another failure): no candidate
    runs after it, and the unwanted result is not re-checked."""
    calls, stopped = [], threading.Event()

    def interesting(source: str) -> bool:
        calls.append(source)
        if len(calls) == 4:
            stopped.set()
        return "special_thing" in source
    result = Reducer(interesting, stop=stopped.is_set).reduce(PROGRAM, known_interesting=True)
    assert result.stats.stop_reason == "stopped: the caller no longer wanted the search"
    assert len(calls) == 4 and result.stats.runs == 4


def test_max_runs_budget():
    result = reduce_source(PROGRAM, lambda s: "special_thing" in s, max_runs=5)
    assert result.stats.stop_reason == "budget: max runs reached"
    assert "special_thing" in result.source


def test_flaky_predicate_is_detected_and_the_answer_still_holds_once():
    rng = random.Random(1)
    flips = itertools.count()

    def flaky(source: str) -> bool:
        next(flips)
        return "special_thing" in source and rng.random() < 0.6
    result = reduce_source(PROGRAM, flaky, budget_s=5)
    # whatever came back was confirmed by a fresh call, or is the original
    assert "special_thing" in result.source
    assert result.stats.runs == next(flips)


def test_cache_avoids_retesting_the_same_candidate():
    seen = []
    result = reduce_source(PROGRAM, lambda s: seen.append(s) or "special_thing" in s)
    assert len(seen) == len(set(seen)) + 1  # only the final confirmation repeats a text
    assert result.stats.cache_hits > 0


def test_parallel_batches_give_the_same_result_as_serial():
    predicate = lambda s: "special_thing" in s and "Linear" in s  # noqa: E731
    serial = reduce_source(PROGRAM, predicate)
    parallel = reduce_source(PROGRAM, predicate, parallelism=4)
    assert count_tokens(parallel.source) <= count_tokens(serial.source) + 2
    assert predicate(parallel.source)


def test_unparseable_input_is_reported():
    result = reduce_source("def broken(:\n", lambda s: True)
    assert result.stats.stop_reason.startswith("the input does not parse")


# --- property: every answer parses and satisfies the predicate --------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "torch", "x"])
EXPRS = st.recursive(
    st.one_of(NAMES, st.integers(0, 300).map(str)),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "*", "-"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(NAMES, st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
    ),
    max_leaves=6,
)
STATEMENTS = st.recursive(
    st.tuples(NAMES, EXPRS).map(lambda t: [f"{t[0]} = {t[1]}"]),
    lambda inner: st.one_of(
        st.tuples(EXPRS, st.lists(inner, min_size=1, max_size=3)).map(
            lambda t: [f"if {t[0]}:"] + ["    " + line for block in t[1] for line in block]),
        st.tuples(NAMES, st.lists(inner, min_size=1, max_size=3)).map(
            lambda t: [f"for {t[0]} in range(3):"] + ["    " + line for block in t[1] for line in block]),
        st.tuples(NAMES, st.lists(inner, min_size=1, max_size=3)).map(
            lambda t: [f"def {t[0]}(p, q=1):"] + ["    " + line for block in t[1] for line in block]),
    ),
    max_leaves=8,
)
PROGRAMS = st.lists(STATEMENTS, min_size=1, max_size=6).map(lambda blocks: "\n".join(l for b in blocks for l in b) + "\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=PROGRAMS, needle=st.sampled_from(["torch", "a", "x", "1"]))
def test_every_result_parses_and_satisfies_the_predicate(program, needle):
    def predicate(source: str) -> bool:
        return needle in source
    result = reduce_source(program, predicate, max_runs=400)
    ast.parse(result.source)
    assert predicate(result.source) or not predicate(program)
    assert count_tokens(result.source) <= count_tokens(program)


DEAD = '''
import math
import torch
import torch.nn as nn
from collections import OrderedDict, deque


class Config:
    width: int = 8
    depth: int = 3


class Unused(nn.Module):
    pass


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg.width, cfg.width)
        self.head = nn.Linear(cfg.width, 2)

    def forward(self, x):
        return self.proj(deque([x])[0])


print(Model(Config())(torch.randn(1, 8)))
'''


def test_dead_code_goes_in_one_run():
    """Unread imports, an unused class, an unread field and an unread submodule: one candidate."""
    calls = []

    def holds(source: str) -> bool:
        calls.append(source)
        return "self.proj" in source and "deque" in source and "randn" in source

    from runners.reduce.dead import dead_code_edits
    tree = ast.parse(DEAD)
    name, edit = next(dead_code_edits(tree))
    assert name == "dead" and edit(tree)
    after = ast.unparse(tree)
    for gone in ("import math", "OrderedDict", "class Unused", "depth", "self.head"):
        assert gone not in after, gone
    for kept in ("import torch", "torch.nn as nn", "deque", "width", "self.proj"):
        assert kept in after, kept
    result = reduce_source(DEAD, holds)
    assert result.stats.passes.get("dead") and "self.head" not in result.source


def test_unread_assignments_that_call_nothing_are_dead():
    """What the fine passes leave of a line once its readers are gone goes with the dead code; an
    assignment whose value calls something may be the failing call itself and stays."""
    from runners.reduce.dead import without_dead_code

    source = (
        "import torch\n"
        "start = 0.0\n"
        "class Attention(torch.nn.Module):\n"
        "    def forward(self, x, mask):\n"
        "        b, t, d = x.shape\n"
        "        scale: float = d ** -0.5\n"
        "        n, _ = mask.shape\n"
        "        out = torch.relu(x)\n"
        "        if mask.any():\n"
        "            hit = 1\n"
        "        return x * n\n"
        "loss = torch.compile(Attention())(torch.ones(2, 3, 4), torch.ones(2, 3))\n")
    cleaned = without_dead_code(source)
    for gone in ("start", "b, t, d", "scale", "hit"):
        assert gone not in cleaned, gone
    for kept in ("n, _ = mask.shape", "out = torch.relu(x)", "loss = torch.compile"):
        assert kept in cleaned, kept
    ast.parse(cleaned)


def test_statements_that_do_nothing_are_dead():
    """What a budget-bound search left in the recompile_limit case: the model's name alone on a line
    and an `__init__` that only calls `super().__init__()`; `x = x`. The placeholder `...` and an `__init__`
    that does more stay."""
    from runners.reduce.dead import without_dead_code

    source = (
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "    def forward(self, x):\n"
        "        0\n"
        "        x = x\n"
        "        return x\n"
        "class Sized(torch.nn.Module):\n"
        "    def __init__(self, n=2):\n"
        "        super().__init__()\n"
        "    def forward(self, x):\n"
        "        ...\n"
        "model = Net()\n"
        "model\n"
        "for step in range(3):\n"
        "    pass\n"
        "    torch.compile(model)(torch.ones(1))\n"
        "Sized()\n")
    cleaned = without_dead_code(source)
    assert "__init__(self)" not in cleaned and "\nmodel\n" not in cleaned and "0\n" not in cleaned
    assert "x = x" not in cleaned  # what a dropped layer's `x = self.norm(x)` leaves
    assert "pass" not in cleaned and "def __init__(self, n=2)" in cleaned and "..." in cleaned
    assert ast.parse(cleaned) and without_dead_code(cleaned) == cleaned


def test_loops_whose_body_never_runs_are_dead():
    """What a budget-bound search left of the AOTI report's serving loop: `for query in []:`. A loop
    over something that may be empty, or with an `else`, stays."""
    from runners.reduce.dead import without_dead_code

    source = (
        "import torch\n"
        "embed = torch.compile(torch.relu)\n"
        "for query in []:\n"
        "    q = embed()\n"
        "while False:\n"
        "    embed()\n"
        "for query in ():\n"
        "    pass\n"
        "else:\n"
        "    embed(torch.ones(1))\n"
        "for query in range(n):\n"
        "    embed(torch.ones(2))\n"
        "for block, in zip():\n"
        "    embed(torch.ones(3))\n"
        "for i, block in enumerate(zip([], blocks)):\n"
        "    embed(torch.ones(4))\n"
        "for i in range(0):\n"
        "    embed(torch.ones(5))\n"
        "for block in zip(blocks):\n"
        "    embed(torch.ones(6))\n"
        "for block in torch.nn.ModuleList():\n"
        "    embed(torch.ones(7))\n"
        "for block in nn.ModuleList(blocks):\n"
        "    embed(torch.ones(8))\n")
    cleaned = without_dead_code(source)
    assert "in []" not in cleaned and "while" not in cleaned
    assert "zip()" not in cleaned and "enumerate" not in cleaned and "range(0)" not in cleaned
    assert "ModuleList()" not in cleaned and "nn.ModuleList(blocks)" in cleaned
    assert "in ()" in cleaned and "range(n)" in cleaned and "zip(blocks)" in cleaned
    assert without_dead_code(cleaned) == cleaned


def test_without_dead_code_is_the_all_at_once_candidate_as_text():
    from runners.reduce.dead import without_dead_code

    cleaned = without_dead_code(DEAD)
    assert "import math" not in cleaned and "self.head" not in cleaned and "deque" in cleaned
    assert without_dead_code(cleaned) == cleaned and without_dead_code("def (") == "def ("


def test_an_edit_that_failed_is_not_retried_on_the_same_statement_until_a_round_confirms_the_fixpoint():
    """Dropping 'long_name_here' fails while the print still says 'extra'; the print loses 'extra'
    later in the same round. The next round skips the remembered failure (the first statement has
    not changed), and the round that remembers nothing finds that it now succeeds."""
    def holds(source: str) -> bool:
        return all(part in source for part in ("'keep'", "f(", "print(")) and (
            "extra" not in source or "long_name_here" in source)

    result = reduce_source("f('keep', 'long_name_here')\nprint('extra')\n", holds)
    assert result.source == "f('keep')\nprint()\n"
    assert result.stats.failures_recalled >= 1 and result.stats.stop_reason.startswith("fixpoint")


def test_code_a_pass_leaves_unread_goes_before_the_next_pass_works_on_it():
    """While `helper` is called its body matters; dropping `f`'s unused parameter (with the
    argument that calls it) leaves `helper` unread. The dead-code pass runs right after the pass
    that made progress, so the finer passes never spend runs shrinking a body that is about to go
    (on `dynamic_batch_specialized` the next round's dead-code pass found 75 tokens that the
    expression pass had spent 151 runs around)."""
    program = ("import torch\n\n\ndef helper(a, b):\n    return torch.relu(a * b + 1)\n\n\n"
               "def f(x, y):\n    return x.sin()\n\n\nprint(f(torch.ones(1), helper(torch.ones(1), 2)))\n")

    def holds(source: str) -> bool:
        return "x.sin()" in source and "print(f(torch.ones(1)" in source and (
            "helper(torch" not in source or "relu(a * b + 1)" in source)

    result = reduce_source(program, holds)
    assert "helper" not in result.source
    assert result.stats.passes.get("parameters") and result.stats.passes.get("dead")
    assert not result.stats.passes.get("arguments") and not result.stats.passes.get("expressions")


def test_an_original_the_caller_already_saw_fail_is_not_run_again():
    source = "x = 1\ny = 2\nprint(x)\n"
    asked = []

    def predicate(candidate: str) -> bool:
        asked.append(candidate)
        return prints("1\n")(candidate)

    result = Reducer(predicate).reduce(source, known_interesting=True)
    assert source not in asked and "y = 2" not in result.source
    asked.clear()
    Reducer(predicate).reduce(source)
    assert asked[0] == source  # without the caller's word, the original is the first run
