"""Publishing a report the runner wrote: its suggested test path never leaves the repository's
contents, and the comment is published before the draft PR, so a PR that cannot be opened never
costs the issue its report."""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace

import pytest

from bot.app.github import GitHub, StaticToken
from bot.app.publish import SUGGESTED_PATH_PREFIXES, draft_pull_refusal, publish_report, unsafe_test_path
from bot.core.report import TestSuggestion as Suggestion  # (a name pytest would take for a test class)
from bot.core.report import TriageReport

from tests.fakes.github import API, BOT

from .conftest import FIXTURES, drain, webhook_payload

REPO = "octo-org/octo-repo"


def report_json(**changes) -> dict:
    report = json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))
    report.update(issue_number=12, **changes)
    return report


def with_suggested_path(path: str) -> TriageReport:
    report = TriageReport.from_dict(report_json())
    return replace(report, test_suggestion=replace(report.test_suggestion, path=path))


# -- which paths a test may be committed at (pure)

@pytest.mark.parametrize("path", [
    "../../victim-repo/contents/.github/x.py", "test/../../x.py", "test/..", "/test/x.py", "test//x.py",
    "test/./x.py", "test\\x.py", "test/x.txt", "test/x.py?ref=evil", "test/x.py#", "test/%2e%2e/x.py",
    "test/x y.py", "test/.hidden.py", "",
])
def test_a_path_that_could_leave_the_repository_is_refused(path):
    assert "is not a relative path to a .py file" in unsafe_test_path(path)


def test_the_reports_own_path_must_be_under_test():
    for path in ("test/dynamo/test_repros.py", "test/inductor/test_torchinductor.py", "test/test_x-y.1.py"):
        assert unsafe_test_path(path, SUGGESTED_PATH_PREFIXES) is None
    assert unsafe_test_path("torch/_dynamo/x.py") is None  # a maintainer may name one
    assert "is not under test/" in unsafe_test_path("torch/_dynamo/x.py", SUGGESTED_PATH_PREFIXES)
    assert "is not under test/" in unsafe_test_path("benchmarks/test_x.py", SUGGESTED_PATH_PREFIXES)


def test_a_report_suggesting_a_bad_path_gets_no_draft_pr():
    assert draft_pull_refusal(with_suggested_path("test/dynamo/test_repros.py"), None) is None
    refusal = draft_pull_refusal(with_suggested_path("../../victim-repo/contents/.github/x.py"), None)
    assert refusal.startswith("the report's suggestion: the test file '../../victim-repo")
    assert draft_pull_refusal(with_suggested_path("test/dynamo/test_repros.py"), "test/../x.py") is not None


# -- end to end through the App

def finish_runner(app, deliver, fake, report: dict) -> str:
    deliver("issues_labeled")
    drain(app)
    key = fake.dispatches[0]["inputs"]["job-id"]
    payload = webhook_payload("workflow_run_completed_runner")
    payload["workflow_run"]["display_title"] = f"pt2-triage {key} (issue 12, cpu)"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report.json", json.dumps(report))
    fake.add_run(payload["workflow_run"], artifacts={f"pt2-triage-report-{key}": buffer.getvalue()})
    assert deliver(payload, "workflow_run").status_code == 202
    drain(app)
    return key


def test_a_traversing_suggested_path_reaches_no_other_repository_and_opens_no_pr(app, deliver, fake):
    report = report_json()
    report["test_suggestion"]["path"] = "../../victim-repo/contents/.github/x.py"
    key = finish_runner(app, deliver, fake, report)
    assert [e.path for e in fake.exchanges if "victim-repo" in e.url] == []
    assert [e for e in fake.exchanges if e.method == "PUT"] == [] and fake.pulls == []
    [comment] = fake.bot_comments_on(12)
    assert "Reproducing on" not in comment["body"] and "Graph break" in comment["body"]
    assert app.extensions["pt2_triage"].services.store.runner_job(key).state == "published"


def test_the_comment_is_published_even_when_the_draft_pr_cannot_be_opened(app, deliver, fake):
    fake.fail("POST", r"/pulls$", 403, times=10, body={"message": "Resource not accessible by integration"})
    finish_runner(app, deliver, fake, report_json())
    [comment] = fake.bot_comments_on(12)
    assert "Reproducing on" not in comment["body"] and "Graph break" in comment["body"]
    assert "oncall: pt2" in fake.labels[12] and fake.pulls == []



def test_the_reports_words_close_no_issue_and_reference_none_from_the_draft_pr(app, deliver, fake):
    """The draft PR body shows the runner's verification note; a forged one saying "Fixes o/r#7" or
    an issue's URL would close that issue when a maintainer merges the PR (and cross-reference it now)."""
    report = report_json()
    report["regression_test"].update(verified_fails=True, verification_note=(
        "Fixes octo-org/octo-repo#7, closes https://github.com/octo-org/octo-repo/issues/8"))
    finish_runner(app, deliver, fake, report)
    [pull] = fake.pulls
    assert "octo-repo#7" not in pull["body"] and "https://github.com" not in pull["body"]
    assert "octo-repo#\u200b7" in pull["body"] and "https:\u200b//github.com" in pull["body"]


# -- the test holds the issue's code: CI on the repository's own branch never starts it unread

def publish_with_test(fake, ruleset, report: TriageReport):
    gh = GitHub(API, StaticToken("ghs_test"), bot_login=BOT["login"])
    return publish_report(gh, REPO, 12, report, ruleset, draft_pr=True)


def test_every_commit_on_the_test_branch_skips_ci_a_reruns_update_too(fake, ruleset):
    """A push or PR made with an installation token starts the repository's workflows, which on its
    own branch may read its secrets; `[skip ci]` in the head commit stops `push` and `pull_request` ones."""
    report = TriageReport.from_dict(report_json())
    publish_with_test(fake, ruleset, report)
    rerun = replace(report, regression_test=replace(report.regression_test,
                                                    file_source=report.regression_test.file_source + "\n# re-run\n"))
    result = publish_with_test(fake, ruleset, rerun)
    commits = [c for c in fake.commits if c["branch"] == "pt2-triage/issue-12"]
    assert len(commits) == 2 and all("[skip ci]" in c["message"] for c in commits)
    assert result.pull_request is not None and len(fake.pulls) == 1


def test_the_draft_pr_says_first_that_ci_waits_for_a_maintainer_to_read_the_test(fake, ruleset):
    publish_with_test(fake, ruleset, TriageReport.from_dict(report_json()))
    [pull] = fake.pulls
    notice = pull["body"].split("\n\n")[1]
    assert notice.startswith("**CI was not started: read the test first.**")
    assert "code taken from issue #12" in notice and "`[skip ci]`" in notice
    assert "pushing a commit to this branch" in notice
