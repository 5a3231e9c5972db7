"""Events as the features read them: a payload's shape is never trusted."""
from __future__ import annotations

from bot.app.event import Event, Issue

from .conftest import webhook_payload


def test_an_event_names_its_repository_installation_and_sender():
    event = Event("issues", "labeled", webhook_payload("issues_labeled"))
    assert (event.repo, event.installation_id, event.sender, event.default_branch) == ("octo-org/octo-repo", 4242,
                                                                                       "maintainer", "main")
    assert event.workflow_run is None


def test_a_malformed_payload_reads_as_nothing_never_as_an_error():
    odd = Event("issues", "labeled", {"repository": ["not", "an", "object"], "installation": {"id": True},
                                      "workflow_run": {"id": 5}, "issue": {"number": "12"}})
    assert (odd.repo, odd.installation_id, odd.sender, odd.workflow_run) == (None, None, None, None)
    assert odd.default_branch == "main" and Issue.from_payload(odd.payload["issue"]) is None


def test_an_issue_reads_as_the_classifier_reads_a_report():
    issue = Issue.from_payload(webhook_payload("issues_labeled")["issue"])
    assert issue.number == 12 and not issue.is_pull_request and issue.has_label("PT2-TRIAGE")
    assert issue.text == f"# {issue.title}\n\n{issue.body}"
    untitled = Issue.from_payload({"number": 3, "title": None, "body": None, "labels": [{"name": 7}, "x"]})
    assert (untitled.text, untitled.labels) == ("# \n\n", ())
