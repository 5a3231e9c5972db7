"""bot/app/ci_publish.py: a failed CI run's comment always fits GitHub's limit on a comment's length
(the fake GitHub answers 422 to a longer body, as GitHub does), so a run that broke many shards still
gets its comment, and the comment's hidden state still reads for the next run."""
from __future__ import annotations

from bot.app.ci_publish import MAX_COMMENT_CHARS, collect_failures, fitted_ci_comment
from bot.pipeline.ci_failure import decode_state, render_ci_comment

from .conftest import drain, webhook_payload

REPO = "octo-org/octo-repo"
SHARDS = 20


def fail_shards(fake, fixture_bytes, run_id: int = 501) -> dict:
    """A failed CI run of PR #7 whose SHARDS jobs all fail with the same Inductor error."""
    payload = webhook_payload("workflow_run_completed_ci_failure")
    payload["workflow_run"]["id"] = run_id
    log = fixture_bytes("inductor_cpp_compile_error.log")
    jobs = [{"id": 60 + i, "run_id": run_id, "name": f"test (inductor, {i + 1}, {SHARDS})", "conclusion": "failure",
             "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}/job/{60 + i}",
             "steps": [{"name": "Test", "conclusion": "failure", "number": 3}]} for i in range(SHARDS)]
    fake.add_run(payload["workflow_run"], jobs=jobs, logs={60 + i: log for i in range(SHARDS)})
    return payload


def test_a_run_that_broke_every_shard_gets_its_comment_within_githubs_limit(app, deliver, fake, fixture_bytes):
    deliver(fail_shards(fake, fixture_bytes), "workflow_run")
    drain(app)
    assert [e for e in fake.exchanges if e.status == 422] == []
    [comment] = fake.bot_comments_on(7)
    body = comment["body"]
    assert len(body) <= MAX_COMMENT_CHARS and body.count("Log excerpt") >= 1
    assert all(f"test (inductor, {i + 1}, {SHARDS})" in body for i in range(SHARDS))  # each job in the table
    [run] = decode_state(body)
    assert run.run_id == 501 and len(run.jobs) == SHARDS


def test_a_comment_cut_as_a_last_resort_keeps_its_state(app, deliver, fake, fixture_bytes):
    deliver(fail_shards(fake, fixture_bytes), "workflow_run")
    services = app.extensions["pt2_triage"].services
    gh = services.github_for(4242)
    run = gh.workflow_run(REPO, 501)
    report = collect_failures(gh, REPO, run, services.classifier)
    assert len(render_ci_comment(report)) > MAX_COMMENT_CHARS  # what was posted before: GitHub refused it
    cut = fitted_ci_comment(report, max_chars=3_000)
    assert len(cut) <= 3_000 and "cut to GitHub's size limit" in cut
    assert [r.run_id for r in decode_state(cut)] == [501]


class Recording:
    """The App's classifier, noting how many job logs the fake GitHub had served at each classify."""

    def __init__(self, classifier, fake):
        self.classifier, self.fake, self.served_at_classify = classifier, fake, []

    def __getattr__(self, name):
        return getattr(self.classifier, name)

    def classify(self, text, *args, **kwargs):
        self.served_at_classify.append(sum(e.path.endswith("/logs") for e in self.fake.exchanges))
        return self.classifier.classify(text, *args, **kwargs)


def test_each_log_is_analyzed_before_the_next_is_downloaded(app, deliver, fake, fixture_bytes):
    """Twenty failed jobs with 64 MB logs would be 1.3 GB held at once; one at a time they are one log."""
    deliver(fail_shards(fake, fixture_bytes), "workflow_run")
    services = app.extensions["pt2_triage"].services
    gh = services.github_for(4242)
    recording = Recording(services.classifier, fake)
    before = sum(e.path.endswith("/logs") for e in fake.exchanges)
    report = collect_failures(gh, REPO, gh.workflow_run(REPO, 501), recording)
    assert len(report.findings) == SHARDS
    per_job = [served - before for served in recording.served_at_classify]
    assert per_job[0] == 1 and per_job[-1] == SHARDS and per_job == sorted(per_job)
