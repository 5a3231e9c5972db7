"""bot/app/github: which comments are the App's own. Only one our bot account wrote, and only when its
body starts with the marker: a marker quoted from an issue or a CI log into one of our comments, or
written by another bot, does not make a comment ours (it would be overwritten, its state trusted)."""
from __future__ import annotations

import pytest

from bot.app.factory import github_factory
from bot.app.github import GitHub, StaticToken, is_marked_bot_comment
from bot.app.settings import Settings
from tests.bot.app.conftest import drain
from tests.fakes.github import API, BOT

REPO = "octo-org/octo-repo"
REPORT = "<!-- pt2-triage:report -->"
CI = "<!-- pt2-triage:ci-failure -->"
OTHER_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}


@pytest.fixture
def gh(fake, clock):
    return GitHub(API, StaticToken("ghs_test"), sleep=clock.sleep, clock=clock, bot_login=BOT["login"])


def test_a_marker_is_ours_only_at_the_start_of_our_bots_comment():
    ours = {"body": REPORT + "\n### PT2 triage", "user": BOT}
    assert is_marked_bot_comment(ours, REPORT, BOT["login"])
    assert not is_marked_bot_comment({"body": CI + "\n> quoted " + REPORT, "user": BOT}, REPORT, BOT["login"])
    assert not is_marked_bot_comment({"body": REPORT + "\nhi", "user": OTHER_BOT}, REPORT, BOT["login"])
    assert not is_marked_bot_comment({"body": REPORT, "user": {"login": BOT["login"], "type": "User"}}, REPORT,
                                     BOT["login"])


def test_without_a_known_login_any_bot_counts_but_still_only_with_the_marker_first():
    assert is_marked_bot_comment({"body": REPORT + "\nv1", "user": OTHER_BOT}, REPORT)
    assert not is_marked_bot_comment({"body": "log line: " + REPORT, "user": OTHER_BOT}, REPORT)


def test_our_ci_comment_quoting_the_report_marker_is_not_taken_for_the_report(gh, fake):
    fake.comments[1] = {"issue": 7, "body": CI + "\n`CppCompileError " + REPORT + "`", "user": BOT}
    posted = gh.upsert_comment(REPO, 7, REPORT + "\nthe report", REPORT)
    assert posted.id != 1 and fake.comments[1]["body"].startswith(CI)


def test_another_bots_comment_that_starts_with_our_marker_is_not_ours(gh, fake):
    fake.comments[1] = {"issue": 12, "body": REPORT + "\nI am another App", "user": OTHER_BOT}
    assert gh.find_marked_comment(REPO, 12, REPORT) is None
    posted = gh.upsert_comment(REPO, 12, REPORT + "\nv1", REPORT)
    assert posted.id != 1 and fake.comments[1]["body"].endswith("I am another App")


def test_a_commit_comment_is_ours_only_with_the_marker_first(gh, fake):
    sha = "a" * 40
    fake.commit_comments[1] = {"sha": sha, "body": "quoted: " + CI, "user": BOT,
                               "html_url": f"https://github.com/{REPO}/commit/{sha}#commitcomment-1"}
    posted = gh.upsert_commit_comment(REPO, sha, CI + "\nCI failed", CI)
    assert posted.id != 1 and fake.commit_comments[1]["body"] == "quoted: " + CI


def test_the_app_knows_its_bot_account_from_its_slug(settings):
    assert settings.bot_login == "pt2-triage[bot]"
    assert Settings(webhook_secret="s", bot_name="triage", app_slug="pt2-triage-staging").bot_login \
        == "pt2-triage-staging[bot]"
    assert Settings(webhook_secret="s", bot_name="triage").bot_login == "triage[bot]"
    assert github_factory(settings)(4242).bot_login == "pt2-triage[bot]"


def test_a_label_edits_no_other_bots_marked_comment(app, deliver, fake):
    fake.comments[1] = {"issue": 12, "body": REPORT + "\nmirrored by another App", "user": OTHER_BOT}
    assert deliver("issues_labeled").status_code == 202
    drain(app)
    assert fake.comments[1]["body"].endswith("mirrored by another App")
    assert [c["body"].startswith(REPORT) for c in fake.bot_comments_on(12) if c["user"] == BOT] == [True]
