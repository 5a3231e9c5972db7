"""Webhook intake: nothing happens unless the signature is right; every delivery is at most one job."""
from __future__ import annotations

import json

from bot.webhooks import Delivery, parse_delivery, route, signature_for, verify_signature

from .conftest import SECRET, drain, webhook_payload


def test_forged_signature_is_refused_with_no_side_effects(app, deliver, fake):
    response = deliver("issues_labeled", signature="sha256=" + "0" * 64)
    assert response.status_code == 401
    store = app.extensions["pt2_triage"].services.store
    assert store.job_counts() == {} and drain(app) == 0 and fake.calls == []


def test_missing_signature_is_refused(app, deliver):
    assert deliver("issues_labeled", signature="").status_code == 401


def test_stale_signature_from_a_rotated_secret_is_refused(app, deliver):
    assert deliver("issues_labeled", secret="the secret we had last year").status_code == 401


def test_signature_over_a_different_body_is_refused(app, deliver):
    original = json.dumps(webhook_payload("issues_labeled")).encode()
    tampered = original.replace(b'"number": 12', b'"number": 13')
    assert deliver("issues_labeled", body=tampered, signature=signature_for(SECRET, original)).status_code == 401


def test_malformed_json_with_a_valid_signature_is_a_400(app, deliver):
    response = deliver(None, event="issues", body=b'{"action": "labeled", ')
    assert response.status_code == 400 and "not JSON" in response.json["error"]
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


def test_unknown_events_and_actions_are_acknowledged_and_ignored(app, deliver, fake):
    ping = deliver("ping")
    assert ping.status_code == 200 and ping.json["status"] == "ignored"
    closed = webhook_payload("issues_labeled") | {"action": "closed"}
    assert deliver(closed, "issues").json["status"] == "ignored"
    assert deliver({"zen": "Keep it logically awesome."}, "star").status_code == 200
    assert drain(app) == 0 and fake.calls == []


def test_missing_delivery_header_is_a_400(app):
    body = json.dumps(webhook_payload("ping")).encode()
    response = app.test_client().post("/webhook", data=body, headers={
        "X-GitHub-Event": "ping", "X-Hub-Signature-256": signature_for(SECRET, body)})
    assert response.status_code == 400


def test_verify_signature_is_exact():
    body = b'{"zen":"Design for failure."}'
    good = signature_for("s3cret", body)
    assert verify_signature(("s3cret",), body, good)
    assert not verify_signature(("s3cret",), body, good.upper())
    assert not verify_signature(("s3cret",), body, good[:-1])
    assert not verify_signature(("s3cret",), body, good.replace("sha256=", "sha1="))
    assert verify_signature(("new", "s3cret"), body, good)  # during a rotation both are accepted


def test_parse_refuses_an_oversized_body_before_hashing():
    refusal = parse_delivery({}, b"x" * (25 * 1024 * 1024 + 1), ("s",))
    assert refusal.status == 413


def test_route_ignores_comments_not_addressed_to_the_bot_and_bots():
    payload = webhook_payload("issue_comment_created")
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage").kind == "comment_command"
    payload["comment"]["body"] = "LGTM"
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage") is None
    payload["comment"]["body"] = "@pt2-triage run"
    payload["comment"]["user"]["type"] = "Bot"
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage") is None
