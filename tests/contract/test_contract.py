"""Our fixtures and the fake GitHub against GitHub's official OpenAPI descriptions (npm @octokit/*).

The fake's exchanges are checked both ways (requests and answers) when each App test ends
(tests/bot/app/conftest.py) and when each Action test's loopback fake stops; these tests show the
checks catch drift, keep the fake's answer shapes current, and validate every webhook fixture.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from tests.fakes.github import FakeGitHub, shapes

from . import build_fake_shapes
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


# -- the fake GitHub (tests/fakes/github.py), held to GitHub's description both ways

def test_the_fakes_shapes_are_githubs_required_fields():
    assert build_fake_shapes.build() == shapes(), (
        "tests/fakes/github_shapes.json is stale: run .venv/bin/python -m tests.contract.build_fake_shapes")


def comment(comment_id: int = 1, **changes) -> dict:
    return {**shapes()["POST /repos/{owner}/{repo}/issues/{issue_number}/comments 201"], "id": comment_id, **changes}


def test_the_response_check_accepts_githubs_answers():
    contract = rest_contract()
    url = f"{API}/repos/o/r/issues/12/comments"
    assert contract.check_response("POST", url, 201, {}, json.dumps(comment())) == []
    link = f'<{API}/repos/o/r/issues/12/comments?per_page=1&page=2>; rel="next"'
    assert contract.check_response("GET", url, 200, {"Link": link}, json.dumps([comment()]), {"per_page": "1"}) == []
    assert contract.check_response("GET", f"{API}/repos/o/r/actions/jobs/5/logs", 302, {"Location": "x"}, b"") == []


def test_the_response_check_catches_drift():
    contract = rest_contract()
    url = f"{API}/repos/o/r/issues/12/comments"
    missing = {key: value for key, value in comment().items() if key != "html_url"}
    assert "'html_url' is a required property" in contract.check_response("POST", url, 201, {}, json.dumps(missing))[0]
    assert contract.check_response("POST", url, 201, {}, json.dumps(comment(id="one")))  # not an integer
    assert contract.check_response("POST", url, 201, {}, b"")  # GitHub answers with the comment
    not_paged = contract.check_response("POST", url, 201, {"Link": f'<{url}?page=2>; rel="next"'}, json.dumps(comment()))
    assert "does not paginate" in not_paged[0]
    elsewhere = contract.check_response("GET", url, 200, {"Link": f'<{API}/repos/o/r/pulls?page=2>; rel="next"'}, b"[]")
    assert "is not a page of this list" in elsewhere[0]
    too_many = contract.check_response("GET", url, 200, {}, json.dumps([comment(n) for n in range(31)]))
    assert "a page of 31 items, more than per_page=30" in too_many[0]


def test_the_fake_paginates_like_github():
    fake = FakeGitHub()
    for n in range(150):
        fake.comments[n] = {"issue": 12, "body": f"comment {n}", "user": {"login": "someone", "type": "User"}}
    path = f"{API}/repos/{fake.repo}/issues/12/comments"
    status, headers, body = fake.handle("GET", f"{path}?per_page=100", None)
    assert status == 200 and len(json.loads(body)) == 100
    assert headers["Link"] == (f'<{path}?per_page=100&page=2>; rel="next", <{path}?per_page=100&page=2>; rel="last"')
    status, headers, body = fake.handle("GET", f"{path}?per_page=100&page=2", None)
    assert [c["body"] for c in json.loads(body)][-1] == "comment 149"
    assert 'rel="prev"' in headers["Link"] and 'rel="next"' not in headers["Link"]
    assert len(json.loads(fake.handle("GET", path, None)[2])) == 30  # GitHub's default page
    assert fake.contract_problems() == []


def test_the_fake_served_on_loopback_is_held_to_the_contract_when_it_stops():
    with FakeGitHub() as fake:
        answer = requests.post(f"{fake.url}/repos/{fake.repo}/issues/12/comments", json={"body": "hello"},
                               headers={"Authorization": "Bearer t"}, timeout=10)
    assert answer.status_code == 201 and answer.json()["user"]["type"] == "Bot"
    assert [(r.method, r.template, r.authorization) for r in fake.requests] == [
        ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "Bearer t")]
    with pytest.raises(AssertionError, match="request body: 'yes' is not of type 'boolean'"):
        with FakeGitHub() as fake:
            requests.post(f"{fake.url}/repos/{fake.repo}/pulls", timeout=10,
                          json={"title": "t", "head": "b", "base": "main", "draft": "yes"})
