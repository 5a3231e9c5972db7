"""Runner reports as plain values: which issue a finished run publishes to, and what it publishes."""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace

from bot.app.features.runner_report import (CompletedRun, CompleteRunnerJob, RunState, SaveReport, decide, parse,
                                            report_from_zip)
from bot.app.plan import RecordFingerprints, UpsertComment
from bot.app.publish import Publish
from bot.app.repo_config import RepoConfig

from .conftest import REPO, event, graph_break_report, runner_job


def completed(workflow: str = "pt2-triage-runner.yml") -> CompletedRun:
    run = event("workflow_run", "workflow_run_completed_runner").workflow_run
    return CompletedRun(REPO, replace(run, path=f".github/workflows/{workflow}"), head_repository=REPO)


def test_parse_takes_a_completed_run_and_leaves_a_payload_without_one():
    assert parse(event("workflow_run", "workflow_run_completed_runner")) == completed()
    assert parse(event("workflow_run", "workflow_run_completed_runner", workflow_run={"id": "x"})) is None


def test_another_workflows_run_is_not_a_report(rules):
    assert decide(completed("trunk.yml"), RunState(RepoConfig(), rules)).steps == ()
    assert decide(completed("ours.yml"), RunState(RepoConfig(runner_workflow="ours.yml"), rules)).reason == \
        "runner run 30433700 titled 'pt2-triage JOBKEY (issue 12, cpu)' is no waiting job's run; ignored"


def test_a_report_is_published_kept_counted_and_its_job_completed(rules):
    report = graph_break_report()
    state = RunState(RepoConfig(), rules, "k1", runner_job("k1"), report, comment_id=55)
    publish, save, fingerprints, done = decide(completed(), state).steps
    assert isinstance(publish, Publish) and publish.stage == "published"
    assert (publish.number, publish.draft_pr, publish.known_comment_id, publish.fixed) == (12, True, 55, False)
    assert save == SaveReport(REPO, 12, report.to_json(), 30433700)
    c = report.classification
    assert fingerprints == RecordFingerprints(REPO, ((c.signature, c.category, "#12"),))
    assert done == CompleteRunnerJob("k1", 30433700, "published")


def test_the_dispatched_job_not_the_report_chooses_the_issue(rules):
    state = RunState(RepoConfig(), rules, "k1", runner_job("k1"), graph_break_report(issue_number=1))
    assert decide(completed(), state).steps[0].number == 12


def test_no_pr_when_the_request_or_the_repo_wants_none(rules):
    state = RunState(RepoConfig(), rules, "k1", runner_job("k1", draft_pr=False), graph_break_report())
    assert decide(completed(), state).steps[0].draft_pr is False
    state = RunState(RepoConfig(draft_pr=False), rules, "k1", runner_job("k1"), graph_break_report())
    assert decide(completed(), state).steps[0].draft_pr is False


def test_overrides_choose_the_category_and_the_test_file(rules):
    state = RunState(RepoConfig(test_files={"dynamic_shapes": "test/test_dynamic_shapes.py"}), rules, "k1",
                     runner_job("k1"), graph_break_report(), overrides={"category": "dynamic_shapes"})
    publish = decide(completed(), state).steps[0]
    assert publish.category_override == "dynamic_shapes" and publish.test_file == "test/test_dynamic_shapes.py"


def test_a_run_without_a_report_says_so_on_the_issue(rules):
    failure, done = decide(completed(), RunState(RepoConfig(), rules, "k1", runner_job("k1"), None)).steps
    assert isinstance(failure, UpsertComment) and failure.stage == "failure_comment" and failure.number == 12
    assert done == CompleteRunnerJob("k1", 30433700, "failed")


def test_a_report_with_no_waiting_job_publishes_nothing_whatever_issue_it_names(rules):
    plan = decide(completed(), RunState(RepoConfig(), rules, None, None, graph_break_report(issue_number=7)))
    assert plan.steps == () and plan.reason.endswith("is no waiting job's run; ignored")


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_the_report_is_read_from_the_artifacts_root_or_one_folder_down():
    report = json.dumps(graph_break_report().to_dict()).encode()
    assert report_from_zip(zipped({"report.json": report})).issue_number == 12
    assert report_from_zip(zipped({"pt2-triage-report/report.json": report})).issue_number == 12
    assert report_from_zip(zipped({"a/b/report.json": report})) is None
    assert report_from_zip(zipped({"report.json": b"{not json"})) is None
    assert report_from_zip(b"not a zip") is None
