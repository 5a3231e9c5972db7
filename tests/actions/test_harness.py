"""The harness itself: it must read expressions, file commands and workflow commands as the runner does,
or the action tests prove nothing."""
from __future__ import annotations

import pytest

from .harness import Evaluator, ExpressionError, parse_file_command, workflow_commands

CONTEXTS = {"inputs": {"mode": "Issue", "repro-path": "", "n": "3"}, "github": {"event": {"issue": {"number": 12}}},
            "steps": {"a": {"outputs": {"x": "1"}, "outcome": "success"}}}


@pytest.mark.parametrize("expression, value", [
    ("inputs.mode == 'issue'", True),  # string comparison ignores case, as GitHub's does
    ("inputs.repro-path || 'default'", "default"),  # || returns the first truthy operand
    ("inputs.mode == 'repro' && 'runner' || 'app'", "app"),
    ("steps.a.outputs.x", "1"),
    ("steps.missing.outputs.x", None),  # missing properties read as null, interpolate as ''
    ("github.event.issue.number", 12),
    ("!(inputs.mode == 'issue')", False),
    ("always() && steps.a.outcome != 'skipped'", True),
    ("contains(fromJSON('[\"cpu\", \"gpu\"]'), 'GPU')", True),
    ("'it''s'", "it's"),
])
def test_expressions(expression, value):
    assert Evaluator(CONTEXTS, lambda name: name == "always").evaluate(expression) == value


def test_unsupported_syntax_is_an_error_not_a_guess():
    with pytest.raises(ExpressionError):
        Evaluator(CONTEXTS, lambda name: True).evaluate("inputs.mode ~ 'x'")


def test_file_commands_both_forms():
    text = "a=1\nb<<EOF\nline 1\nline 2\nEOF\nc=x=y\n"
    assert parse_file_command(text) == {"a": "1", "b": "line 1\nline 2", "c": "x=y"}
    with pytest.raises(ValueError, match="never closed"):
        parse_file_command("b<<EOF\nno end\n")


def test_stop_commands_silence_everything_until_the_token():
    stdout = "::warning::before\n::stop-commands::tok\n::error::hostile\n::tok::\n::error file=a.py,line=3::after\n"
    commands = workflow_commands(stdout)
    assert [(c.name, c.data) for c in commands] == [("warning", "before"), ("error", "after")]
    assert commands[1].properties == {"file": "a.py", "line": "3"}
