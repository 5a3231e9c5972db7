"""Bug or expected behaviour, as plain values: each rule of bot/rules/disposition.yaml on the text it reads."""
import pytest

from bot.core import disposition
from bot.core.disposition import Facts
from bot.core.ruleset import load_ruleset
from bot.core.tables import RulesError
from tests import paths

TABLE = load_ruleset().dispositions
FUNDAMENTAL = (paths.CORPUS / "recorded" / "graph_break_fullgraph.log").read_text()
DATA_DEPENDENT_IF = (paths.CORPUS / "recorded" / "dynamic_shapes_item.log").read_text()


def decide(**facts):
    return disposition.decide(TABLE, Facts(**{"state": "reproduced", "has_script": True, "failure_text": "", **facts}))


def test_a_fundamental_graph_break_is_a_limitation_with_torchs_hints():
    found = decide(failure_text=FUNDAMENTAL, layer="dynamo")
    assert (found.kind, found.rule) == ("limitation", "fundamental_graph_break")
    assert "Use `torch.cond` to express dynamic control flow." in found.hints
    assert found.workarounds == ("torch_cond",) and not found.wants_regression_test


def test_a_python_if_on_tensor_data_is_a_limitation_with_torch_cond():
    found = decide(failure_text=DATA_DEPENDENT_IF, layer="dynamo")
    assert (found.kind, found.rule, found.workarounds) == ("limitation", "data_dependent_branch", ("torch_cond",))


def test_a_data_dependent_guard_inside_torch_is_a_bug():
    text = DATA_DEPENDENT_IF.replace("Caused by: if x.sum().item() > 0:", "Caused by: torch/_refs/__init__.py:3701 in reshape")
    assert decide(failure_text=text, layer="inductor").kind == "bug"


def test_eager_failing_too_is_a_user_error_whatever_the_message():
    found = decide(failure_text=FUNDAMENTAL, layer="eager", eager_error="RuntimeError: mat1 and mat2 shapes")
    assert found.kind == "user_error" and "RuntimeError: mat1 and mat2 shapes" in found.reason


def test_torch_calling_it_a_dynamo_bug_outranks_the_limitation_rules():
    text = "Hint: This is likely to be a Dynamo bug. Please report an issue to PyTorch.\nHint: This graph break is fundamental"
    assert decide(failure_text=text).kind == "bug"


def test_nothing_run_or_nothing_reproduced_needs_information():
    assert decide(state="not_run", has_script=False).rule == "no_repro"
    needs_gpu = decide(state="not_run", reason_text="the repro needs a CUDA GPU and this runner has none")
    assert needs_gpu.kind == "needs_info" and "CUDA GPU" in needs_gpu.reason
    fixed = decide(state="not_reproduced", reason_text="did not reproduce on 2.13.0; the report used 2.4.0")
    assert fixed.kind == "needs_info" and fixed.wants_regression_test and not fixed.wants_pull_request


def test_a_limitation_in_an_issue_text_counts_when_nothing_could_run():
    assert decide(state="not_run", has_script=False, failure_text=FUNDAMENTAL).kind == "limitation"


def test_everything_else_is_a_compiler_bug_with_the_ladders_reason():
    found = decide(failure_text="torch._inductor.exc.InductorError: CppCompileError", layer="inductor",
                   ladder_note="Passes with every backend before Inductor and fails with it, so Inductor owns it.")
    assert found.kind == "bug" and found.wants_pull_request
    assert found.reason.endswith(": passes with every backend before Inductor and fails with it, so Inductor owns it")


def test_the_table_is_checked():
    good = {"dispositions": {k: "x" for k in disposition.DISPOSITIONS}, "rules": [
        {"id": "a", "disposition": "bug", "when": {}, "reason": "r"}]}
    disposition.parse_dispositions(good, {}, "d.yaml")
    with pytest.raises(RulesError, match="empty `when`"):
        disposition.parse_dispositions({**good, "rules": [{"id": "a", "disposition": "bug", "when": {"state": ["reproduced"]}, "reason": "r"}]}, {}, "d.yaml")
    with pytest.raises(RulesError, match="unknown disposition"):
        disposition.parse_dispositions({**good, "rules": [{"id": "a", "disposition": "wontfix", "when": {}, "reason": "r"}]}, {}, "d.yaml")
