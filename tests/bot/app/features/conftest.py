"""Plain values for the features' `decide`: rules, issues and what is known about them. No Flask,
no SQLite, no GitHub: a decision is a function of its input and state."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.app.context import Rules
from bot.app.event import Event, Issue
from bot.app.issue_triage import IssueState
from bot.app.repo_config import RepoConfig
from bot.app.store import RunnerJob
from bot.core.records import Classification
from bot.core.report import TriageReport
from tests.paths import FIXTURES

from ..conftest import webhook_payload

REPO = "octo-org/octo-repo"
GRAPH_BREAK = Classification(category="graph_break", confidence=0.93, signature="graph_break|Unsupported|x")


@pytest.fixture
def rules(ruleset) -> Rules:
    return Rules(ruleset, None, "pt2-triage", "pt2-triage-runner.yml")


def event(name: str, fixture: str, **changes) -> Event:
    payload = webhook_payload(fixture)
    payload.update(changes)
    return Event(name, payload.get("action"), payload)


def labeled_issue() -> Issue:
    return Issue.from_payload(webhook_payload("issues_labeled")["issue"])


def graph_break_report(issue_number: int = 12) -> TriageReport:
    data = json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))
    return TriageReport.from_dict({**data, "issue_number": issue_number})


def runner_job(job_key: str = "k1", device: str = "cpu", draft_pr: bool = True) -> RunnerJob:
    return RunnerJob(job_key, REPO, 12, 4242, device, "dispatched", draft_pr, "maintainer", 1.0)


@pytest.fixture
def issue_state(rules):
    """What is known about issue #12 (the graph break of issues_labeled.json), with `changes`."""
    def make(issue: Issue | None = None, **changes) -> IssueState:
        state = IssueState(REPO, issue or labeled_issue(), RepoConfig(), rules, GRAPH_BREAK, job_key="job-1",
                           installation_id=4242)
        return replace(state, **changes)
    return make
