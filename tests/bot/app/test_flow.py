"""The App end to end through the Flask test client, with GitHub faked at the HTTP boundary.

label -> verdict comment -> dispatch with the right inputs -> runner's report artifact arrives ->
the same comment updated -> draft PR with the regression test. And the ways that goes wrong.
"""
from __future__ import annotations

import json

import pytest

from bot.app.context import JobContext
from bot.app.event import Event
from bot.app.features import label_triage
from bot.app.github import GitHubError
from bot.app.jobs import run_feature
from bot.app.store import Store
from bot.pipeline.comment import COMMENT_MARKER

from .conftest import drain, graph_break_report_zip, webhook_payload

REPO = "octo-org/octo-repo"


def runner_completed(job_key: str, run_id: int = 30433700) -> dict:
    payload = webhook_payload("workflow_run_completed_runner")
    payload["workflow_run"]["id"] = run_id
    payload["workflow_run"]["display_title"] = f"pt2-triage {job_key} (issue 12, cpu)"
    return payload


def finish_runner(fake, deliver, app, job_key: str, run_id: int = 30433700):
    payload = runner_completed(job_key, run_id)
    fake.add_run(payload["workflow_run"], artifacts={f"pt2-triage-report-{job_key}": graph_break_report_zip(job_key)})
    assert deliver(payload, "workflow_run").status_code == 202
    drain(app)


def test_label_to_comment_dispatch_report_and_draft_pr(app, deliver, fake):
    fake.files[("main", "test/dynamo/test_repros.py")] = (
        "import torch\nfrom torch._dynamo.test_case import run_tests, TestCase\n\n\n"
        "class ReproTests(TestCase):\n    def test_existing(self):\n        pass\n\n\n"
        "if __name__ == '__main__':\n    run_tests()\n")

    response = deliver("issues_labeled")
    assert response.status_code == 202 and response.json["status"] == "queued"
    assert drain(app) == 1

    [pending] = fake.bot_comments_on(12)
    assert pending["body"].startswith(COMMENT_MARKER)
    assert "Graph break" in pending["body"] and "Reproducing on a cpu runner" in pending["body"]
    [dispatch] = fake.dispatches
    assert dispatch["workflow"] == "pt2-triage-runner.yml" and dispatch["ref"] == "main"
    inputs = dispatch["inputs"]
    assert set(inputs) == {"issue-number", "repro", "device", "job-id"}
    assert inputs["issue-number"] == "12" and inputs["device"] == "cpu"
    assert "torch.compile" in inputs["repro"] and "```" not in inputs["repro"]

    finish_runner(fake, deliver, app, inputs["job-id"])

    [final] = fake.bot_comments_on(12)  # the same comment, edited
    assert final["body"].startswith(COMMENT_MARKER) and "Reproducing on" not in final["body"]
    assert "Draft PR with the regression test:** #100" in final["body"]
    assert "oncall: pt2" in fake.labels[12]
    [pull] = fake.pulls
    assert pull["draft"] and pull["head"] == "pt2-triage/issue-12" and pull["base"] == "main"
    assert "Refs #12" in pull["body"]
    committed = fake.files[("pt2-triage/issue-12", "test/dynamo/test_repros.py")]
    assert "def test_existing" in committed and "class ReproTests" in committed
    assert committed.count("def test_") == 2  # the generated method went into the existing class


def test_rerun_updates_the_comment_and_the_pr_instead_of_duplicating(app, deliver, fake):
    fake.permissions["maintainer"] = "maintain"
    deliver("issues_labeled")
    drain(app)
    finish_runner(fake, deliver, app, fake.dispatches[0]["inputs"]["job-id"], run_id=1)

    rerun = webhook_payload("issue_comment_created")
    rerun["comment"]["body"] = "@pt2-triage rerun"
    assert deliver(rerun, "issue_comment").status_code == 202
    drain(app)
    assert len(fake.dispatches) == 2 and fake.dispatches[1]["inputs"]["device"] == "cpu"
    assert fake.reactions == [(3001, "eyes")]
    finish_runner(fake, deliver, app, fake.dispatches[1]["inputs"]["job-id"], run_id=2)

    assert len(fake.bot_comments_on(12)) == 1
    assert len(fake.pulls) == 1
    assert len([c for c in fake.commits if c["branch"] == "pt2-triage/issue-12"]) == 1  # same test: no new commit


def test_duplicate_delivery_makes_one_job_and_one_comment(app, deliver, fake):
    first = deliver("issues_labeled", delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    again = deliver("issues_labeled", delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert first.status_code == 202 and again.status_code == 200 and again.json["status"] == "duplicate"
    assert drain(app) == 1
    assert len(fake.bot_comments_on(12)) == 1 and len(fake.dispatches) == 1


def test_command_from_a_read_only_user_is_refused_politely(app, deliver, fake):
    fake.permissions["maintainer"] = "read"
    deliver("issue_comment_created")
    drain(app)
    assert fake.dispatches == [] and fake.reactions == []
    [reply] = fake.comments_on(12)
    assert "@maintainer" in reply["body"] and "needs write access" in reply["body"]
    another = webhook_payload("issue_comment_created")
    another["comment"]["id"] += 1
    deliver(another, "issue_comment")  # another comment: one more reply, no more
    drain(app)
    assert len(fake.comments_on(12)) == 2


def classified_by_comment(app, deliver, fake, body: str) -> str:
    """The one bot comment on issue 12 after a comment with `body` is handled."""
    payload = webhook_payload("issue_comment_created")
    payload["comment"]["body"] = body
    deliver(payload, "issue_comment")
    drain(app)
    [comment] = fake.bot_comments_on(12)
    return comment["body"]


def test_anyone_may_classify(app, deliver, fake):
    body = classified_by_comment(app, deliver, fake, "@PT2-Triage Classify, please")
    assert body.startswith(COMMENT_MARKER) and "Graph break" in body
    assert fake.dispatches == []


def test_an_issue_whose_stored_report_no_longer_reads_is_still_triaged(app, deliver, fake):
    """A report saved before reports were validated (or by an older version) is no report to compare
    with, not a job that fails on every retry."""
    app.extensions["pt2_triage"].services.store.save_report(REPO, 12, '{"classification": "old shape"}', None)
    body = classified_by_comment(app, deliver, fake, "@pt2-triage classify")
    assert body.startswith(COMMENT_MARKER) and "Graph break" in body


def test_category_override_is_remembered_and_relabels(app, deliver, fake):
    fake.permissions["maintainer"] = "admin"
    payload = webhook_payload("issue_comment_created")
    payload["comment"]["body"] = "@pt2-triage category dynamic-shapes"
    deliver(payload, "issue_comment")
    drain(app)
    assert app.extensions["pt2_triage"].services.store.overrides(REPO, 12) == {"category": "dynamic_shapes"}
    assert any("dynamic" in label for label in fake.labels[12])


def test_unknown_command_is_explained(app, deliver, fake):
    payload = webhook_payload("issue_comment_created")
    payload["comment"]["body"] = "@pt2-triage frobnicate `x` @pytorch/team"
    deliver(payload, "issue_comment")
    drain(app)
    [reply] = fake.comments_on(12)
    assert "is not a command I know" in reply["body"] and "| `@pt2-triage run [cpu|gpu]` |" in reply["body"]


def test_restart_with_a_job_half_done_resumes_without_repeating(make_app, deliver, fake, clock, settings):
    app = make_app()
    fake.fail("POST", r"/dispatches$", 500, times=99)  # the worker gets as far as the comment, then dies
    deliver("issues_labeled", client=app)
    store = app.extensions["pt2_triage"].services.store
    job = store.claim("doomed-worker", lease_s=120)
    services = app.extensions["pt2_triage"].services
    event = Event(job.kind, job.payload["action"], job.payload)
    with pytest.raises(GitHubError):
        run_feature(label_triage, event, JobContext(services, job, services.github_for(job.installation_id)))
    assert len(fake.bot_comments_on(12)) == 1 and fake.dispatches == []

    fake.failures.clear()  # the process is gone; GitHub is healthy again; a new process starts
    restarted = make_app(Store(settings.db_path, clock=clock))
    assert drain(restarted) == 0  # the dead worker's lease still holds
    clock.now += 121
    assert drain(restarted) == 1
    assert len(fake.bot_comments_on(12)) == 1  # not posted again
    assert len(fake.dispatches) == 1
    assert restarted.extensions["pt2_triage"].services.store.job(job.id).state == "done"


def test_transient_github_failure_requeues_the_job(app, deliver, fake, clock):
    fake.fail("POST", r"/dispatches$", 502, times=6)  # more than one job attempt's retries
    deliver("issues_labeled")
    drain(app)
    store = app.extensions["pt2_triage"].services.store
    assert store.job_counts() == {"queued": 1} and fake.dispatches == []
    clock.now += 10
    drain(app)
    assert store.job_counts() == {"done": 1} and len(fake.dispatches) == 1
    assert len(fake.bot_comments_on(12)) == 1


def test_failed_ci_run_comments_once_on_the_pr_and_updates_it(app, deliver, fake, fixture_bytes):
    def fail_run(run_id: int, job_id: int):
        payload = webhook_payload("workflow_run_completed_ci_failure")
        payload["workflow_run"]["id"] = run_id
        fake.add_run(payload["workflow_run"],
                     jobs=[{"id": job_id, "run_id": run_id, "name": "test (inductor, 1, 2)", "conclusion": "failure",
                            "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}/job/{job_id}",
                            "steps": [{"name": "Test", "conclusion": "failure", "number": 3}]},
                           {"id": job_id + 1, "run_id": run_id, "name": "lint", "conclusion": "success",
                            "html_url": "https://github.com/x", "steps": []}],
                     logs={job_id: fixture_bytes("inductor_cpp_compile_error.log")})
        deliver(payload, "workflow_run")
        drain(app)

    fail_run(501, 61)
    [comment] = fake.bot_comments_on(7)
    assert "Backend (Inductor) compile failure" in comment["body"] and "Log excerpt" in comment["body"]
    fail_run(502, 62)
    [comment] = fake.bot_comments_on(7)
    assert "run 502" in comment["body"].lower() or "/runs/502" in comment["body"]
    assert "Earlier failed runs on this PR (1)" in comment["body"]


def test_issue_with_a_pt2_error_gets_one_suggestion(app, deliver, fake):
    deliver("issues_opened")
    deliver("issues_edited")
    drain(app)
    [suggestion] = fake.comments_on(13)
    assert "`pt2-triage` label" in suggestion["body"]


def test_bad_repo_config_is_reported_once_and_defaults_apply(app, deliver, fake):
    fake.files[("main", ".github/pt2-triage.yml")] = "label: pt2-triage\ndraft-pr: yes please\n"
    deliver("issues_labeled")
    relabeled = webhook_payload("issues_labeled")
    relabeled["issue"]["updated_at"] = "2026-11-20T10:15:00Z"  # the label removed and added again
    deliver(relabeled, "issues")
    drain(app)
    notices = [c for c in fake.comments_on(12) if "has a problem" in c["body"]]
    assert len(notices) == 1 and "draft_pr" in notices[0]["body"]
    assert len(fake.bot_comments_on(12)) == 2  # the notice and the one triage comment
    assert len([c for c in fake.bot_comments_on(12) if c["body"].startswith(COMMENT_MARKER)]) == 1


def labeled_by(login: str, sender_type: str = "User") -> dict:
    payload = webhook_payload("issues_labeled")
    payload["sender"].update(login=login, type=sender_type)
    return payload


def test_a_label_a_stranger_applied_through_an_issue_form_runs_nothing(app, deliver, fake):
    """Anyone may open an issue through a form that applies the triage label: GitHub answers `read` for
    them, so the verdict is posted and a maintainer is told how to start the run."""
    deliver(labeled_by("drive-by"), "issues")
    drain(app)
    assert fake.dispatches == []
    [verdict] = fake.bot_comments_on(12)
    assert verdict["body"].startswith(COMMENT_MARKER) and "Graph break" in verdict["body"]
    assert "a maintainer can start a run of the repro with `@pt2-triage run`" in verdict["body"]
    assert [e.path for e in fake.exchanges if e.path.endswith("/permission")] == [
        f"/repos/{REPO}/collaborators/drive-by/permission"]


def test_the_apps_own_label_runs_the_repro_only_under_auto_suggest_label(app, deliver, fake):
    deliver(labeled_by("pt2-triage[bot]", "Bot"), "issues")
    drain(app)
    assert fake.dispatches == [] and len(fake.bot_comments_on(12)) == 1
    fake.files[("main", ".github/pt2-triage.yml")] = "auto_suggest: label\n"
    app.extensions["pt2_triage"].services._configs.clear()
    again = labeled_by("pt2-triage[bot]", "Bot")
    again["issue"]["updated_at"] = "2026-11-20T10:15:00Z"  # the label removed and added again
    deliver(again, "issues")
    drain(app)
    assert len(fake.dispatches) == 1
    assert not any(e.path.endswith("/permission") for e in fake.exchanges)  # the App is not asked about itself


def test_label_that_is_not_ours_does_nothing(app, deliver, fake):
    payload = webhook_payload("issues_labeled")
    payload["label"]["name"] = "module: docs"
    deliver(payload, "issues")
    drain(app)
    assert fake.comments == {} and fake.dispatches == []


def test_labeling_a_pull_request_does_nothing(app, deliver, fake):
    """GitHub's issue events also describe pull requests; the triage label on one is not a request."""
    payload = webhook_payload("issues_labeled")
    payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/12",
                                        "html_url": f"https://github.com/{REPO}/pull/12",
                                        "diff_url": f"https://github.com/{REPO}/pull/12.diff",
                                        "patch_url": f"https://github.com/{REPO}/pull/12.patch"}
    response = deliver(payload, "issues")
    assert response.status_code == 200 and response.json["status"] == "ignored"
    assert drain(app) == 0 and fake.comments == {} and fake.dispatches == [] and fake.calls == []


def test_healthz(app):
    response = app.test_client().get("/healthz")
    assert response.status_code == 200 and response.json["ok"] and response.json["schema_version"] >= 1


def test_a_runner_report_retried_after_a_crash_is_published_and_counted_once(app, deliver, fake, clock, monkeypatch):
    deliver("issues_labeled")
    drain(app)
    job_key = fake.dispatches[0]["inputs"]["job-id"]
    store = app.extensions["pt2_triage"].services.store
    real_save = Store.save_report
    crashes = iter([True])

    def save_then_crash_once(self, *args, **kwargs):
        real_save(self, *args, **kwargs)
        if next(crashes, False):
            raise RuntimeError("the worker died right after keeping the report")
    monkeypatch.setattr(Store, "save_report", save_then_crash_once)
    finish_runner(fake, deliver, app, job_key)
    assert store.job_counts() == {"done": 1, "queued": 1}
    writes = [call for call in fake.calls if call[0] != "GET"]
    clock.now += 10  # past the retry's backoff
    assert drain(app) == 1 and store.job_counts() == {"done": 2}
    assert [call for call in fake.calls if call[0] != "GET"] == writes  # nothing published again
    assert len(fake.bot_comments_on(12)) == 1 and len(fake.pulls) == 1
    signature = json.loads(store.latest_report(REPO, 12))["classification"]["signature"]
    assert store.record_fingerprint(REPO, signature, "graph_break", "#12") == 2  # counted once before this
    assert store.runner_job(job_key).state == "published"


def test_a_failed_ci_run_retried_after_a_crash_comments_and_counts_once(app, deliver, fake, clock, monkeypatch,
                                                                       fixture_bytes):
    payload = webhook_payload("workflow_run_completed_ci_failure")
    fake.add_run(payload["workflow_run"],
                 jobs=[{"id": 61, "run_id": payload["workflow_run"]["id"], "name": "test (inductor, 1, 2)",
                        "conclusion": "failure", "html_url": f"https://github.com/{REPO}/actions/runs/1/job/61",
                        "steps": [{"name": "Test", "conclusion": "failure", "number": 3}]}],
                 logs={61: fixture_bytes("inductor_cpp_compile_error.log")})
    store = app.extensions["pt2_triage"].services.store
    real_remember, real_record = Store.remember_comment, Store.record_fingerprint
    counted, crashes = [], iter([True])

    def remember_then_crash_once(self, *args, **kwargs):
        real_remember(self, *args, **kwargs)
        if next(crashes, False):
            raise RuntimeError("the worker died right after commenting")
    monkeypatch.setattr(Store, "remember_comment", remember_then_crash_once)
    monkeypatch.setattr(Store, "record_fingerprint", lambda self, *a, **k: counted.append(real_record(self, *a, **k)))
    deliver(payload, "workflow_run")
    drain(app)
    assert store.job_counts() == {"queued": 1} and len(fake.bot_comments_on(7)) == 1
    clock.now += 10  # past the retry's backoff
    drain(app)
    assert store.job_counts() == {"done": 1}
    assert len(fake.bot_comments_on(7)) == 1  # the retry found its comment and edited it
    assert counted == [1]
