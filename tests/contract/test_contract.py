"""Our fixtures and mocks against GitHub's official OpenAPI descriptions (npm @octokit/*).

The per-call REST check runs in the `fake` fixture of every App test (tests/bot/app/conftest.py);
these tests show the checker itself catches drift, and validate every webhook fixture.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .openapi import rest_contract, webhook_key, webhook_problems

WEBHOOKS = Path(__file__).resolve().parents[1] / "bot" / "fixtures" / "webhooks"
API = "https://api.github.com"
EVENTS = ("issue_comment", "workflow_run", "issues", "ping")


def event_of(path: Path) -> str:
    return next(event for event in EVENTS if path.stem.startswith(event))


@pytest.mark.parametrize("path", sorted(WEBHOOKS.glob("*.json")), ids=lambda p: p.stem)
def test_every_webhook_fixture_is_valid_against_githubs_schema(path):
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert webhook_problems(event_of(path), payload) == []


def test_the_webhook_check_catches_a_wrong_payload():
    payload = json.loads((WEBHOOKS / "issues_labeled.json").read_text(encoding="utf-8"))
    payload["issue"]["number"] = "twelve"
    del payload["repository"]
    problems = webhook_problems("issues", payload)
    assert any("'twelve' is not of type 'integer'" in p for p in problems)
    assert any("'repository' is a required property" in p for p in problems)
    assert webhook_key("issue_comment", "created") == "issue-comment-created"


def test_the_rest_check_accepts_real_calls():
    contract = rest_contract()
    assert contract.check("GET", f"{API}/repos/o/r/contents/test/dynamo/test_repros.py?ref=main", None, 200) == []
    assert contract.check("GET", f"{API}/repos/o/r/git/ref/heads/pt2-triage/issue-12", None, 404) == []
    assert contract.check("POST", f"{API}/repos/o/r/actions/workflows/pt2-triage-runner.yml/dispatches",
                          json.dumps({"ref": "main", "inputs": {"device": "cpu"}}), 204) == []


def test_the_rest_check_catches_drift():
    contract = rest_contract()
    assert contract.check("GET", f"{API}/repos/o/r/issue/12/comments", None, 200)  # no such path
    assert contract.check("PUT", f"{API}/repos/o/r/issues/12/comments", None, 200)  # no such method
    assert contract.check("POST", f"{API}/repos/o/r/pulls", json.dumps({"title": "t", "head": "b", "draft": "yes"}), 201)
    assert contract.check("POST", f"{API}/repos/o/r/issues/12/labels", json.dumps({"labels": ["x"]}), 207)
