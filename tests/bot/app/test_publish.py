"""What the trusted side publishes for a report: labels, decided as plain values."""
from __future__ import annotations

from dataclasses import replace

from bot.pipeline.comment import render_pending_comment
from bot.app.publish import NEEDS_TRIAGE, labels_for
from bot.core.records import Classification
from bot.core.report import Reproduction, TriageReport

SURE = Classification(category="graph_break", confidence=0.93, signature="graph_break|Unsupported|x")
UNSURE = replace(SURE, confidence=0.41, unsure=True, decided_by="model",
                 alternatives=(("graph_break", 0.41), ("dynamic_shapes", 0.33), ("dynamo_internal_error", 0.1)))


def test_a_sure_verdict_gets_the_categorys_labels(ruleset):
    assert labels_for(TriageReport(classification=SURE, source="issue"), ruleset) == (
        "oncall: pt2", "module: dynamo", "module: graph breaks")


def test_an_unsure_verdict_gets_no_category_label_only_needs_triage(ruleset):
    assert labels_for(TriageReport(classification=UNSURE, source="issue"), ruleset) == (NEEDS_TRIAGE,)


def test_a_run_that_reproduced_settles_an_unsure_text(ruleset):
    reproduced = Reproduction(status="reproduced", reproduced=True, runs_total=1, runs_reproduced=1, device="cpu",
                              category_from_text="graph_break", category_from_run="graph_break", category_changed=False,
                              summary="Reproduced.")
    report = TriageReport(classification=UNSURE, source="issue", reproduction=reproduced)
    assert labels_for(report, ruleset)[0] == "oncall: pt2"


def test_the_pending_comment_says_unsure_and_names_the_top_two(ruleset):
    comment = render_pending_comment(UNSURE, ruleset, "cpu")
    assert "### PT2 triage: unsure, `graph_break` (41%) or `dynamic_shapes` (33%)" in comment
    assert "### PT2 triage: Graph break" in render_pending_comment(SURE, ruleset, "cpu")
