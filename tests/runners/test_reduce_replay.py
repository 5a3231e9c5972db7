"""Replaying: a failure across calls rebuilt as the compiled module called as the script called it."""
from __future__ import annotations

import ast

from runners.reduce.hoist import Placeholders
from runners.reduce.replay import replay_statements, replayed_programs
from tests.runners.test_reduce_hoist import RECORDS, SCRIPT, at_entry, tensor


def test_a_failure_across_calls_replays_the_compiled_modules_calls_as_one_loop():
    """A recompile shows only across calls: the compiled module is built once and called on inputs
    like each of the script's calls; calls that differ by a list's length become one loop."""
    script = SCRIPT.replace("compiled(torch.randint(0, 10, (2, 5)), torch.zeros(2, 5, dtype=torch.bool))",
                            "compiled(torch.randint(0, 10, (2, 5)), [torch.zeros(2, 5, dtype=torch.bool)] * _)")
    calls = [[tensor(2, 5, dtype="int64"), {"seq": "list", "items": [tensor(2, 5, dtype="bool")] * n}] for n in (1, 2, 3, 4)]
    entry = {"class": "Encoder", "calls": calls}
    program = replayed_programs(ast.parse(script), [at_entry(RECORDS[0], grad=False), RECORDS[1]], entry)[0]
    assert program.splitlines()[-4:] == [
        "model = torch.compile(Encoder(Config(dim=16)), fullgraph=True)",
        "with torch.no_grad():",
        "    for n in range(1, 5):",
        "        model(torch.zeros(2, 5, dtype=torch.int64), [torch.zeros(2, 5, dtype=torch.bool) for _ in range(n)])"]
    assert "SGD" not in program and "def main" not in program


def test_calls_without_one_even_step_between_them_are_replayed_one_by_one():
    def model_call(*sizes):
        return ast.parse(f"model(torch.randn({', '.join(map(str, sizes))}))", mode="eval").body
    steps = replay_statements([model_call(8, 3), model_call(16, 3), model_call(24, 3)], Placeholders())
    assert [ast.unparse(ast.fix_missing_locations(s)) for s in steps] == ["for __hoisted_0__ in range(8, 32, 8):\n    model(torch.randn(__hoisted_0__, 3))"]
    uneven = replay_statements([model_call(8, 3), model_call(16, 3), model_call(40, 3)], Placeholders())
    assert [ast.unparse(s) for s in uneven] == ["model(torch.randn(8, 3))", "model(torch.randn(16, 3))", "model(torch.randn(40, 3))"]
    two_vary = replay_statements([model_call(1, 1), model_call(2, 2), model_call(3, 3)], Placeholders())
    assert len(two_vary) == 3


def test_a_replay_needs_a_recorded_compiled_module_of_the_file():
    calls = [[tensor(2, 5, dtype="int64"), tensor(2, 5, dtype="bool")]]
    assert replayed_programs(ast.parse(SCRIPT), RECORDS, {"class": None, "calls": calls}) == []  # a function, or torch's
    assert replayed_programs(ast.parse(SCRIPT), RECORDS, {"class": "Encoder", "calls": "x"}) == []
    assert replayed_programs(ast.parse(SCRIPT), RECORDS, None) == []
