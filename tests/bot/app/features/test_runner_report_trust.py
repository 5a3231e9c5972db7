"""Which finished runs count as runner reports, and what a hostile or broken report artifact leads to.

Only a run the App dispatched is a report: a `workflow_dispatch` run of the repository's own code whose
title is exactly a waiting job's run-name. A fork's pull request that edits pt2-triage-runner.yml runs
it too, and its report must publish nothing. A report that does not read is "no usable report": the
issue is told, and the job does not fail.
"""
from __future__ import annotations

import io
import json
import struct
import zipfile
from dataclasses import replace

import pytest

from bot.app.features.runner_report import CompletedRun, RunState, decide, not_dispatched_by_us, parse, report_from_zip
from bot.app.repo_config import RepoConfig
from bot.core.report import UNKNOWN_CATEGORY

from ..conftest import FIXTURES, drain, webhook_payload
from .conftest import REPO, event, graph_break_report, runner_job

FORK = "mallory/octo-repo"


def report_json(**changes) -> dict:
    report = json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))
    report["issue_number"] = 12
    report.update(changes)
    return report


def zipped(report: dict | bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("report.json", report if isinstance(report, bytes) else json.dumps(report))
    return buffer.getvalue()


def runner_run(title: str, run_id: int = 30433700, event_name: str = "workflow_dispatch",
               head_repository: str = REPO) -> dict:
    """A completed run of pt2-triage-runner.yml as its webhook says it: who started it, whose code ran."""
    payload = webhook_payload("workflow_run_completed_runner")
    run = payload["workflow_run"]
    run.update(id=run_id, display_title=title, event=event_name)
    run["head_repository"] = {**run["head_repository"], "full_name": head_repository}
    return payload


def finish(app, deliver, fake, payload: dict, report: dict | bytes) -> None:
    fake.add_run(payload["workflow_run"], artifacts={"pt2-triage-report": zipped(report)})
    assert deliver(payload, "workflow_run").status_code == 202
    drain(app)


def labeled(app, deliver, fake) -> str:
    """Issue #12 labeled: its pending comment posted and a runner job dispatched; the job's id."""
    deliver("issues_labeled")
    drain(app)
    return fake.dispatches[0]["inputs"]["job-id"]


def store_of(app):
    return app.extensions["pt2_triage"].services.store


def downloads(fake) -> list[str]:
    return [e.path for e in fake.exchanges if "/artifacts" in e.path]


# -- who started the run (pure)

def completed(event_name: str = "workflow_dispatch", head_repository: str | None = REPO) -> CompletedRun:
    run = event("workflow_run", "workflow_run_completed_runner").workflow_run
    return CompletedRun(REPO, replace(run, event=event_name), head_repository)


def test_parse_reads_whose_code_the_run_ran():
    assert parse(event("workflow_run", "workflow_run_completed_runner")).head_repository == REPO
    payload = runner_run("x", head_repository=FORK)
    assert parse(event("workflow_run", "workflow_run_completed_runner", workflow_run=payload["workflow_run"])) \
        .head_repository == FORK


def test_only_a_dispatched_run_of_this_repositorys_code_can_be_ours():
    assert not_dispatched_by_us(completed()) is None
    assert "started by 'pull_request', not workflow_dispatch" in not_dispatched_by_us(completed("pull_request"))
    assert "ran code from 'mallory/octo-repo'" in not_dispatched_by_us(completed(head_repository=FORK))
    assert "ran code from None" in not_dispatched_by_us(completed(head_repository=None))


def test_a_fork_pull_requests_run_publishes_nothing_even_with_a_job_and_a_report_in_hand(rules):
    state = RunState(RepoConfig(), rules, "k1", runner_job("k1"), graph_break_report())
    plan = decide(completed("pull_request", FORK), state)
    assert plan.steps == () and plan.reason.endswith("not workflow_dispatch; ignored")


# -- forged runs end to end: nothing is published, nothing downloaded, the real job still waits

def test_a_fork_pull_request_run_with_no_job_waiting_publishes_nothing(app, deliver, fake):
    forged = report_json(issue_number=4242)
    finish(app, deliver, fake, runner_run("Fix a typo", event_name="pull_request", head_repository=FORK), forged)
    assert fake.bot_comments_on(4242) == [] and fake.labels.get(4242) is None
    assert fake.pulls == [] and [key for key in fake.files if key[0] != "main"] == []
    assert downloads(fake) == []


def test_a_fork_run_titled_exactly_like_the_waiting_job_does_not_take_it(app, deliver, fake):
    key = labeled(app, deliver, fake)
    fork_run = runner_run(f"pt2-triage {key} (issue 12, cpu)", 778, "pull_request", FORK)
    finish(app, deliver, fake, fork_run, report_json(tool_version="EVIL"))
    [comment] = fake.bot_comments_on(12)
    assert "Reproducing on a cpu runner" in comment["body"] and "EVIL" not in comment["body"]
    assert store_of(app).runner_job(key).state == "dispatched" and fake.pulls == []


def test_a_pull_request_titled_after_the_job_id_does_not_take_the_job(app, deliver, fake):
    key = labeled(app, deliver, fake)
    for run_id, event_name in ((778, "pull_request"), (779, "workflow_dispatch")):
        finish(app, deliver, fake, runner_run(f"docs: mention {key}", run_id, event_name), report_json(tool_version="EVIL"))
    [comment] = fake.bot_comments_on(12)
    assert "Reproducing on a cpu runner" in comment["body"] and store_of(app).runner_job(key).state == "dispatched"
    assert downloads(fake) == []

    finish(app, deliver, fake, runner_run(f"pt2-triage {key} (issue 12, cpu)", 780), report_json())  # the real run
    [comment] = fake.bot_comments_on(12)
    assert "Reproducing on" not in comment["body"] and store_of(app).runner_job(key).state == "published"


# -- a report that does not read: the issue is told, the job completes

@pytest.mark.parametrize("breakage", [
    {"classification": {"category": "graph_break", "confidence": "0.9", "signature": "s"}},
    {"reproduction": {**report_json()["reproduction"], "summary": ["a"]}},
    {"schema_version": True},
])
def test_a_malformed_report_is_reported_as_no_usable_report(app, deliver, fake, breakage):
    key = labeled(app, deliver, fake)
    finish(app, deliver, fake, runner_run(f"pt2-triage {key} (issue 12, cpu)"), report_json(**breakage))
    [comment] = fake.bot_comments_on(12)
    assert "the runner did not produce a report" in comment["body"]
    assert store_of(app).runner_job(key).state == "failed" and store_of(app).job_counts() == {"done": 2}


def test_a_category_from_a_newer_ruleset_is_published_as_unknown_with_a_note(app, deliver, fake):
    key = labeled(app, deliver, fake)
    report = report_json()
    report["classification"]["category"] = "no_such_category"
    finish(app, deliver, fake, runner_run(f"pt2-triage {key} (issue 12, cpu)"), report)
    [comment] = fake.bot_comments_on(12)
    assert f"(`{UNKNOWN_CATEGORY}`)" in comment["body"] and "unknown category 'no_such_category'" in comment["body"]
    assert "triage review" in fake.labels[12] and store_of(app).runner_job(key).state == "published"


def hostile(**tweak) -> bytes:
    """A zip whose one member's headers say what a hostile runner can make them say."""
    raw = bytearray(zipped(report_json()))
    for signature, flags, method, crc in ((b"PK\x03\x04", 6, 8, 14), (b"PK\x01\x02", 8, 10, 16)):
        at = raw.find(signature)
        if tweak.get("encrypted"):
            raw[at + flags] |= 1
        if tweak.get("method"):
            raw[at + method:at + method + 2] = struct.pack("<H", tweak["method"])
        if tweak.get("bad_crc"):
            raw[at + crc] ^= 0xFF
    return bytes(raw)


@pytest.mark.parametrize("data", [
    hostile(bad_crc=True), hostile(encrypted=True), hostile(method=99), hostile(method=14),
    zipped(b"[" * 200_000 + b"]" * 200_000), zipped(b"[1, 2]"), zipped(b"null"),
], ids=["bad_crc", "encrypted", "method_99", "lzma_garbage", "deep_json", "array", "null"])
def test_an_artifact_that_does_not_read_is_no_report(data):
    assert report_from_zip(data) is None


def test_a_deeply_nested_free_form_field_is_no_report():
    report = report_json()
    report["reproduction"]["runs"][0]["probe"] = json.loads('{"a": ' * 50 + "1" + "}" * 50)
    assert report_from_zip(zipped(report)) is None


def test_a_failed_run_re_run_by_a_maintainer_publishes_its_report_once(app, deliver, fake):
    """The runner run left no report (the issue says so); a maintainer re-runs it from the Actions page
    and its second attempt, the same run id, leaves one: that report is published, once, and a
    redelivery of it, or a third attempt with no report, posts nothing more."""
    key = labeled(app, deliver, fake)
    payload = runner_run(f"pt2-triage {key} (issue 12, cpu)")
    fake.add_run(payload["workflow_run"], artifacts={})
    assert deliver(payload, "workflow_run").status_code == 202
    drain(app)
    assert store_of(app).runner_job(key).state == "failed"
    [failure] = fake.bot_comments_on(12)
    said = failure["body"]
    assert "report" in said.lower() and "Graph break" not in said
    again = runner_run(f"pt2-triage {key} (issue 12, cpu)")
    again["workflow_run"]["run_attempt"] = 2
    finish(app, deliver, fake, again, report_json())
    [comment] = fake.bot_comments_on(12)
    assert comment is failure and "Graph break" in comment["body"]  # the one comment, updated
    assert store_of(app).runner_job(key).state == "published"
    updates = len([e for e in fake.exchanges if e.method == "PATCH"])
    deliver(again, "workflow_run")  # delivered again: refused as a replay, or a job that finds it done
    drain(app)
    assert len([e for e in fake.exchanges if e.method == "PATCH"]) == updates and len(fake.bot_comments_on(12)) == 1


def test_a_re_run_that_again_leaves_no_report_says_nothing_more(rules):
    failed = replace(runner_job("k1"), state="failed", run_id=30433700)
    plan = decide(completed(), RunState(RepoConfig(), rules, "k1", failed, None))
    assert plan.steps == () and "left no report again" in plan.reason
