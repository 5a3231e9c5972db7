"""New-issue suggestions as plain values: one, for a confident PT2 verdict on an unlabeled issue."""
from __future__ import annotations

from dataclasses import replace

import pytest

from bot.app.event import Issue
from bot.app.features.issue_suggestions import IssueText, SuggestState, decide, parse
from bot.app.plan import AddLabels, Once, Reply
from bot.app.repo_config import RepoConfig

from .conftest import GRAPH_BREAK, REPO, event

ISSUE = Issue(13, "compile fails", "```python\nimport torch\n```")


def test_parse_takes_an_opened_or_edited_issue_but_not_a_pull_request():
    assert parse(event("issues", "issues_opened")).issue.number == 13
    assert parse(event("issues", "issues_edited")).repo == REPO
    pull_request = event("issues", "issues_opened")
    pull_request.payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/13"}
    assert parse(pull_request) is None


def test_a_confident_pt2_verdict_gets_one_comment(rules):
    [step] = decide(IssueText(REPO, ISSUE), SuggestState(RepoConfig(), rules, GRAPH_BREAK)).steps
    assert isinstance(step, Once) and step.notice == "suggestion" and step.number == 13
    assert isinstance(step.step, Reply) and "`pt2-triage` label" in step.step.body
    assert "**Graph break** (`graph_break`, confidence 0.93)" in step.step.body


def test_the_repo_may_ask_for_the_label_itself(rules):
    [step] = decide(IssueText(REPO, ISSUE), SuggestState(RepoConfig(auto_suggest="label"), rules, GRAPH_BREAK)).steps
    assert step.step == AddLabels(REPO, 13, ("pt2-triage",))


@pytest.mark.parametrize("verdict", [
    replace(GRAPH_BREAK, category="not_pt2", is_pt2=False),
    replace(GRAPH_BREAK, category="unknown"),
    replace(GRAPH_BREAK, confidence=0.69),
    replace(GRAPH_BREAK, unsure=True),
])
def test_no_suggestion_without_a_confident_specific_pt2_verdict(rules, verdict):
    assert decide(IssueText(REPO, ISSUE), SuggestState(RepoConfig(), rules, verdict)).steps == ()


def test_no_suggestion_when_they_are_off_or_the_issue_has_the_label(rules):
    labeled = replace(ISSUE, labels=("PT2-Triage",))
    assert decide(IssueText(REPO, labeled), SuggestState(RepoConfig(), rules, GRAPH_BREAK)).steps == ()
    assert decide(IssueText(REPO, ISSUE), SuggestState(RepoConfig(auto_suggest="off"), rules, GRAPH_BREAK)).steps == ()
    assert decide(IssueText(REPO, ISSUE), SuggestState(RepoConfig(), rules, None)).reason
