"""bot/app/github: creates made once. A 5xx may come after GitHub posted the reply or started the run,
so such a create is never re-sent blindly: GitHub is asked first (a reply by its hidden id, a run by
the job id in its title), and only what is not there is sent again."""
from __future__ import annotations

import pytest

from bot.app.github import GitHub, GitHubError, StaticToken
from bot.app.plan import Reply
from tests.fakes.github import API, BOT

REPO = "octo-org/octo-repo"
RUNNER = "pt2-triage-runner.yml"
CI = "<!-- pt2-triage:ci-failure -->"


@pytest.fixture
def gh(fake, clock):
    return GitHub(API, StaticToken("ghs_test"), sleep=clock.sleep, clock=clock, bot_login=BOT["login"])


def inputs(job_id: str = "job-1") -> dict[str, str]:
    return {"issue-number": "12", "repro": "", "device": "cpu", "job-id": job_id}


# -- replies

def test_a_reply_answered_502_after_it_was_posted_is_not_posted_again(gh, fake, clock):
    fake.fail("POST", r"/issues/12/comments$", 502, after_doing_it=True)
    reply = gh.post_comment(REPO, 12, "@alice here is what I understand", reply_id="job-1/replied")
    [posted] = fake.comments_on(12)
    assert reply.id in fake.comments and posted["body"].startswith("@alice here is what I understand")
    assert clock.slept == [1.0]


def test_a_reply_answered_502_before_it_was_posted_is_posted_after_a_look(gh, fake):
    fake.fail("POST", r"/issues/12/comments$", 502)
    gh.post_comment(REPO, 12, "@alice hi", reply_id="job-1/replied")
    assert len(fake.comments_on(12)) == 1
    assert [(method, status) for method, _, _, status in fake.calls] == [("GET", 200), ("POST", 502),
                                                                          ("GET", 200), ("POST", 201)]


def test_a_reply_is_found_by_its_id_not_by_its_words(gh, fake):
    first = gh.post_comment(REPO, 12, "@alice hi", reply_id="job-1/replied")
    assert gh.post_comment(REPO, 12, "@alice hi", reply_id="job-1/replied").id == first.id  # the job, retried
    gh.post_comment(REPO, 12, "@alice hi", reply_id="job-2/replied")  # the same words for another command
    assert len(fake.comments_on(12)) == 2


def test_a_reply_with_no_id_is_not_re_sent_after_a_502(gh, fake):
    fake.fail("POST", r"/issues/12/comments$", 502, after_doing_it=True)
    with pytest.raises(GitHubError) as raised:
        gh.post_comment(REPO, 12, "a config problem")
    assert raised.value.transient and len(fake.comments_on(12)) == 1


def test_a_reply_step_repeated_after_a_crash_before_its_checkpoint_posts_once(gh, fake, tmp_path, clock):
    from bot.app.context import JobStore
    from bot.app.store import NewJob, Store

    store = Store(str(tmp_path / "app.sqlite3"), clock=clock)
    store.record_delivery("d1", "issue_comment", "created", NewJob("issue_comment", REPO, {}, number=12))
    job = store.claim("worker-1", lease_s=60)
    step = Reply(REPO, 12, "@alice here is what I understand")
    step.run(gh, JobStore(store, job, lease_s=60))  # the worker died before the checkpoint
    step.run(gh, JobStore(store, store.job(job.id), lease_s=60))  # the job, resumed
    assert len(fake.comments_on(12)) == 1


# -- workflow dispatch

def test_a_dispatch_answered_502_after_it_started_the_run_is_not_sent_again(gh, fake, clock):
    fake.fail("POST", r"/dispatches$", 502, after_doing_it=True)
    gh.dispatch_workflow(REPO, RUNNER, "main", inputs())
    assert [d["inputs"]["job-id"] for d in fake.dispatches] == ["job-1"]
    assert clock.slept == [10.0]  # GitHub lists a dispatched run a moment after it answers


def test_a_dispatch_answered_502_before_it_started_a_run_is_sent_again(gh, fake):
    fake.fail("POST", r"/dispatches$", 502, times=2)
    gh.dispatch_workflow(REPO, RUNNER, "main", inputs())
    assert len(fake.dispatches) == 1
    looks = [url for method, url, _, _ in fake.calls if method == "GET"]
    assert len(looks) == 3 and all("/actions/workflows/pt2-triage-runner.yml/runs" in url for url in looks)


def test_a_job_retried_after_its_dispatch_went_through_starts_no_second_run(gh, fake):
    gh.dispatch_workflow(REPO, RUNNER, "main", inputs("job-1"))
    gh.dispatch_workflow(REPO, RUNNER, "main", inputs("job-1"))  # the job, retried before its checkpoint
    gh.dispatch_workflow(REPO, RUNNER, "main", inputs("job-10"))  # another job: its id is not job-1's
    assert [d["inputs"]["job-id"] for d in fake.dispatches] == ["job-1", "job-10"]


def test_a_dispatch_with_no_job_id_is_not_re_sent_after_a_502(gh, fake):
    fake.fail("POST", r"/dispatches$", 502, after_doing_it=True)
    with pytest.raises(GitHubError):
        gh.dispatch_workflow(REPO, "other.yml", "main", {"device": "cpu"})
    assert len(fake.dispatches) == 1


# -- commit comments

def test_a_commit_comment_answered_502_after_it_was_posted_is_not_posted_again(gh, fake):
    sha = "a" * 40
    fake.fail("POST", rf"/commits/{sha}/comments$", 502, after_doing_it=True)
    gh.upsert_commit_comment(REPO, sha, CI + "\nCI failed", CI)
    assert len(fake.commit_comments) == 1
