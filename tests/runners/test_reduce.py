"""The generic reducer: shrink Python source while a predicate holds."""
from __future__ import annotations

import ast
import itertools
import random
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.reduce import count_tokens, reduce_source

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


def test_shrinks_tensor_shapes_and_loop_counts():
    def holds(source: str) -> bool:
        tree = ast.parse(source)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "randn"]
        return bool(calls) and len(calls[0].args) == 4
    result = reduce_source("import torch\nx = torch.randn(64, 3, 224, 224)\nfor i in range(100):\n    pass\n", holds)
    assert result.source == "x = torch.randn(1, 1, 1, 1)\n"


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
