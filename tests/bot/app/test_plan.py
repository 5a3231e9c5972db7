"""Carrying out a plan: each step once per job, so a job retried after a failure repeats no write."""
from __future__ import annotations

import pytest

from bot.app.context import JobStore
from bot.app.github import GitHub, GitHubError, StaticToken
from bot.app.plan import AddLabels, Once, Plan, React, Reply, UpsertComment, carry_out
from bot.app.store import NewJob, Store
from tests.fakes.github import API

REPO = "octo-org/octo-repo"
MARKER = "<!-- pt2-triage:report -->"


@pytest.fixture
def gh(fake, clock):
    return GitHub(API, StaticToken("ghs_test"), sleep=clock.sleep, clock=clock)


@pytest.fixture
def job_store(tmp_path, clock):
    """A claimed job's view of a fresh store; `again()` is the same job claimed by the next worker."""
    store = Store(str(tmp_path / "app.sqlite3"), clock=clock)
    store.record_delivery("d1", "issues", "labeled", NewJob("issues", REPO, {"action": "labeled"}, number=12))
    job = store.claim("worker-1", lease_s=60)
    view = JobStore(store, job, lease_s=60)

    def again() -> JobStore:
        return JobStore(store, store.job(job.id), lease_s=60)
    view.again = again
    return view


def plan() -> Plan:
    return Plan((React(REPO, 3001), UpsertComment(REPO, 12, f"{MARKER}\nverdict", MARKER, None, stage="verdict"),
                 AddLabels(REPO, 12, ("oncall: pt2",))))


def test_each_step_is_checkpointed_and_a_second_run_of_the_job_repeats_none(gh, fake, job_store):
    carry_out(plan(), gh, job_store)
    assert fake.reactions == [(3001, "eyes")] and len(fake.bot_comments_on(12)) == 1 and fake.labels[12] == ["oncall: pt2"]
    retried = job_store.again()
    assert retried.job.progress["stages"] == ["reacted", "verdict", "labeled"]
    calls = len(fake.calls)
    carry_out(plan(), gh, retried)
    assert len(fake.calls) == calls  # not one request more
    assert job_store.comment_id(REPO, 12) == retried.progress("comment_id")


def test_a_job_that_failed_part_way_resumes_after_its_last_checkpoint(gh, fake, job_store):
    fake.fail("POST", r"/labels$", 422, times=1, body={"message": "Validation Failed"})
    with pytest.raises(GitHubError):
        carry_out(plan(), gh, job_store)
    retried = job_store.again()
    carry_out(plan(), gh, retried)
    assert fake.reactions == [(3001, "eyes")] and len(fake.bot_comments_on(12)) == 1
    assert fake.labels[12] == ["oncall: pt2"] and retried.done("labeled")


def test_a_step_said_once_per_issue_is_given_back_when_it_fails(gh, fake, job_store):
    suggestion = Plan((Once(REPO, 13, "suggestion", Reply(REPO, 13, "a suggestion")),))
    fake.fail("POST", r"/issues/13/comments$", 422, times=1, body={"message": "Validation Failed"})
    with pytest.raises(GitHubError):
        carry_out(suggestion, gh, job_store)
    carry_out(suggestion, gh, job_store.again())
    carry_out(suggestion, gh, job_store.again())  # another event for the same issue: said already
    assert [c["body"].startswith("a suggestion\n\n<!-- pt2-triage:reply ") for c in fake.comments_on(13)] == [True]


def test_nothing_to_do_does_nothing(gh, fake, job_store):
    carry_out(Plan.nothing("not for us"), gh, job_store)
    assert fake.calls == [] and job_store.again().job.progress == {}
