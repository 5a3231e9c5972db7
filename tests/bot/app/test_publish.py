"""What the trusted side publishes for a report, decided as plain values: labels, the draft PR's
change and text, and the App's publish plan with the maintainers' overrides."""
from __future__ import annotations

from dataclasses import replace

from bot.app.context import Rules
from bot.app.publish import (NEEDS_TRIAGE, Publish, branch_for, labels_for, plan_publish, plan_test_change,
                             pull_request_text, with_category_override)
from bot.app.publish import TestChange as Change  # (a name pytest would take for a test class)
from bot.app.repo_config import RepoConfig
from bot.pipeline.comment import render_pending_comment
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


# -- what the draft PR commits, and the App's publish plan

EXISTING = ("import torch\nfrom torch._dynamo.test_case import run_tests, TestCase\n\n\n"
            "class ReproTests(TestCase):\n    def test_existing(self):\n        pass\n\n\n"
            "if __name__ == '__main__':\n    run_tests()\n")


def graph_break_report() -> TriageReport:
    import json

    from tests.paths import FIXTURES

    return TriageReport.from_dict(json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8")))


def test_the_test_goes_into_the_suggested_file_when_the_repository_has_it():
    report = graph_break_report()
    change = plan_test_change(report, 12, "test/dynamo/test_repros.py", EXISTING)
    assert change.path == "test/dynamo/test_repros.py" and change.added_to_existing
    assert "def test_existing" in change.text and change.text.count("def test_") == 2


def test_otherwise_it_is_a_new_file_next_to_where_it_would_go():
    report = graph_break_report()
    assert plan_test_change(report, 12, "test/dynamo/test_repros.py", None) == Change(
        "test/dynamo/test_pt2_triage_issue_12.py", report.regression_test.file_source, False)
    unparsable = plan_test_change(report, 12, "test/dynamo/test_repros.py", "def broken(:\n")
    assert unparsable.path == "test/dynamo/test_pt2_triage_issue_12.py" and not unparsable.added_to_existing
    assert plan_test_change(replace(report, regression_test=None), 12, None, None) is None
    assert branch_for(12) == "pt2-triage/issue-12"


def test_a_category_override_wins_and_says_so():
    report = graph_break_report()
    overridden = with_category_override(report, "dynamic_shapes").classification
    assert (overridden.category, overridden.rule) == ("dynamic_shapes", "human override")
    assert with_category_override(report, None) is report and with_category_override(report, "graph_break") is report


def test_the_pull_request_names_the_issue_and_the_category(ruleset):
    report = graph_break_report()
    change = plan_test_change(report, 12, None, None)
    title, body = pull_request_text(report, 12, change, ruleset)
    assert title == "[pt2-triage] Regression test for #12: Graph break" and "Refs #12" in body


def test_the_apps_publish_plan_takes_the_overrides(ruleset):
    rules = Rules(ruleset)
    report = graph_break_report()
    config = RepoConfig(test_files={"dynamic_shapes": "test/test_dynamic_shapes.py"})
    plan = plan_publish("o/r", 12, report, rules, config, {"category": "dynamic_shapes"}, 55, draft_pr=True)
    assert plan == Publish("o/r", 12, report, rules, True, known_comment_id=55, category_override="dynamic_shapes",
                           test_file="test/test_dynamic_shapes.py")
    named = plan_publish("o/r", 12, report, rules, config, {"test-file": "test/x.py"}, None, draft_pr=False, fixed=True)
    assert (named.test_file, named.category_override, named.fixed) == ("test/x.py", None, True)


def test_only_a_bug_or_an_unreproduced_report_gets_a_draft_pr(ruleset):
    """A limitation (documented, with a workaround) or a user error has no fix coming: no PR, and the
    reason says why, before anything is written to GitHub (no client is needed to decide it)."""
    from bot.app.publish import open_draft_pull
    from bot.core.disposition import Disposition
    from bot.core.report import RegressionTest

    test = RegressionTest(test_name="test_x", class_name="T", assertion="no_error", device="cpu", method_source="",
                          file_source="", verification="fails_same", verification_note="")
    limitation = Disposition("limitation", "fundamental_graph_break", "the graph break is fundamental", "documented")
    report = TriageReport(classification=SURE, source="issue", regression_test=test, disposition=limitation)
    pull, note = open_draft_pull(None, "o/r", 7, report, ruleset)
    assert pull is None and note.startswith("a limitation gets no regression test PR")
