"""bot/app/github: retries, rate limits and idempotent writes, against the fake GitHub (no real sleeping)."""
from __future__ import annotations

import pytest

from bot.app.github import GitHub, GitHubError, RateLimited, RetryPolicy, StaticToken, retry_delay
from tests.fakes.github import API

REPO = "octo-org/octo-repo"
MARKER = "<!-- pt2-triage:report -->"


@pytest.fixture
def gh(fake, clock):
    return GitHub(API, StaticToken("ghs_test"), sleep=clock.sleep, clock=clock)


def test_502_then_200_is_retried_after_a_backoff(gh, fake, clock):
    fake.fail("GET", r"/octo-repo$", 502)
    assert gh.default_branch(REPO) == "main"
    assert clock.slept == [1.0]
    assert [status for _, _, _, status in fake.calls] == [502, 200]


def test_secondary_rate_limit_waits_for_retry_after(gh, fake, clock):
    fake.fail("POST", r"/labels$", 403, headers={"Retry-After": "30"},
              body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."})
    gh.add_labels(REPO, 12, ["oncall: pt2"])
    assert clock.slept == [30.0] and fake.labels[12] == ["oncall: pt2"]


def test_primary_rate_limit_waits_until_the_reset(gh, fake, clock):
    fake.fail("GET", r"/permission$", 403, headers={"x-ratelimit-remaining": "0",
                                                     "x-ratelimit-reset": str(int(clock.now) + 42)},
              body={"message": "API rate limit exceeded"})
    fake.permissions["alice"] = "write"
    assert gh.permission(REPO, "alice") == "write"
    assert clock.slept == [43.0]


def test_a_wait_longer_than_a_worker_should_block_becomes_rate_limited(gh, fake, clock):
    fake.fail("GET", r"/octo-repo$", 429, headers={"Retry-After": "3600"})
    with pytest.raises(RateLimited) as raised:
        gh.default_branch(REPO)
    assert raised.value.retry_at == clock.now + 3600 and clock.slept == []


def test_a_plain_403_is_not_retried(gh, fake, clock):
    fake.fail("POST", r"/labels$", 403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError, match="Resource not accessible") as raised:
        gh.add_labels(REPO, 12, ["x"])
    assert raised.value.status == 403 and not raised.value.transient and clock.slept == []


def test_a_comment_post_answered_502_is_not_posted_twice(gh, fake, clock):
    """GitHub may have created the comment before failing: look again before re-posting."""
    fake.fail("POST", r"/issues/12/comments$", 502, after_doing_it=True)
    comment = gh.upsert_comment(REPO, 12, MARKER + "\nhello", MARKER)
    assert len(fake.comments_on(12)) == 1 and comment.id in fake.comments


def test_upsert_edits_the_marked_bot_comment_and_ignores_impostors(gh, fake):
    fake.comments[1] = {"issue": 12, "body": MARKER + " I am a person quoting the bot", "user": {"login": "eve", "type": "User"}}
    first = gh.upsert_comment(REPO, 12, MARKER + "\nv1", MARKER)
    second = gh.upsert_comment(REPO, 12, MARKER + "\nv2", MARKER)
    assert first.id == second.id != 1
    assert fake.comments[first.id]["body"].endswith("v2") and fake.comments[1]["body"].endswith("quoting the bot")


def test_the_marked_comment_is_found_on_a_later_page_by_following_link(gh, fake):
    for n in range(1, 131):  # a busy issue: the bot's comment is on the second page of 100
        fake.comments[n] = {"issue": 12, "body": f"+1 ({n})", "user": {"login": f"user{n}", "type": "User"}}
    fake.comments[131] = {"issue": 12, "body": MARKER + "\nv1", "user": {"login": "pt2-triage[bot]", "type": "Bot"}}
    assert gh.upsert_comment(REPO, 12, MARKER + "\nv2", MARKER).id == 131
    pages = [call[1] for call in fake.calls if call[0] == "GET"]
    assert len(pages) == 2 and "per_page=100" in pages[0] and "page=2" in pages[1]


def test_installation_tokens_are_cached_until_near_expiry(fake, clock, private_key_path):
    from bot.app.github import AppCredentials

    credentials = AppCredentials("31337", private_key_path.read_text(), API, clock=clock, sleep=clock.sleep)
    gh = GitHub(API, credentials.installation(4242), sleep=clock.sleep, clock=clock)
    gh.default_branch(REPO)
    gh.default_branch(REPO)
    assert fake.tokens_issued == 1


def test_retry_delay_decisions():
    policy = RetryPolicy()
    assert retry_delay(503, {}, "", 2, 0.0, policy) == 4.0
    assert retry_delay(404, {}, "", 0, 0.0, policy) is None
    assert retry_delay(403, {"Retry-After": "7"}, "", 0, 0.0, policy) == 7.0
    assert retry_delay(403, {}, "You have exceeded a secondary rate limit", 0, 0.0, policy) == 60.0
    assert retry_delay(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "100"}, "", 0, 90.0, policy) == 11.0


def test_job_log_keeps_the_tail_of_a_huge_log(gh, fake):
    fake.logs[77] = b"x" * 5000 + b"\nRuntimeError: the end\n"
    download = gh.job_log(REPO, 77, max_bytes=1000)
    assert download.content.endswith(b"RuntimeError: the end\n") and len(download.content) == 1000
    assert download.dropped_bytes == len(fake.logs[77]) - 1000


def test_a_custom_roles_permission_is_the_base_role_it_extends(gh, fake):
    """An organization's custom role comes back as `role_name: <its name>`: read as a role, it was no
    write access, and its members' commands were refused whatever the role grants."""
    fake.permissions.update({"carol": ("release-engineer", "write"), "dave": ("bug-wrangler", "triage"),
                             "erin": "maintain"})
    assert gh.permission(REPO, "carol") == "write"
    assert gh.permission(REPO, "dave") == "read"
    assert gh.permission(REPO, "erin") == "maintain"


def test_anyone_reads_a_public_repository_and_an_unknown_account_has_no_role(gh, fake):
    """GitHub answers a public repository's permission call for any account, `read` for one who is no
    collaborator: a stranger is `read`, never a role that may label or run; no such account is 404."""
    fake.no_such_users.add("ghost-account")
    assert gh.permission(REPO, "stranger") == "read" and gh.permission(REPO, "ghost-account") == "none"
    fake.private = True
    assert gh.permission(REPO, "stranger") == "none"
