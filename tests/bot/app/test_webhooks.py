"""Webhook intake: nothing happens unless the signature is right; every delivery is at most one job."""
from __future__ import annotations

import io
import json

import pytest
from werkzeug.test import EnvironBuilder, run_wsgi_app

from bot.app import read_body
from bot.webhooks import MAX_BODY_BYTES, Delivery, parse_delivery, route, signature_for, verify_signature

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


# -- hostile input: size

class DeclaredOnly(io.RawIOBase):
    """A request body that exists only as a length: it hands out zeros and counts what is read of
    it, so a test can send 200 MB without holding them."""

    def __init__(self, size: int):
        self.size, self.position, self.bytes_read = size, 0, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.position = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence] + offset
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer) -> int:
        count = max(0, min(len(buffer), self.size - self.position))
        buffer[:count] = bytes(count)
        self.position += count
        self.bytes_read += count
        return count


def post_stream(app, body: DeclaredOnly, content_length: str | None, **headers) -> tuple[int, dict]:
    """POST `body` with this Content-Length header (None: without one), handed to the app as a WSGI
    server would; returns the status and the JSON answer."""
    environ = EnvironBuilder("/webhook", method="POST", input_stream=body, headers=headers).get_environ()
    environ.pop("CONTENT_LENGTH")
    if content_length is not None:
        environ["CONTENT_LENGTH"] = content_length
    answer, status, _ = run_wsgi_app(app, environ, buffered=True)
    return int(status.split()[0]), json.loads(b"".join(answer))


def test_a_200_mb_body_is_refused_from_its_length_without_being_read(app):
    body = DeclaredOnly(200 << 20)
    status, answer = post_stream(app, body, str(body.size), **{
        "X-GitHub-Event": "issues", "X-GitHub-Delivery": "huge", "X-Hub-Signature-256": "sha256=" + "0" * 64,
        "Content-Type": "application/json"})
    assert status == 413 and "25 MB" in answer["error"]
    assert body.bytes_read == 0
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


@pytest.mark.parametrize("length, status", [(None, 411), ("12abc", 400), ("-1", 400), (" 1e9", 400), ("", 411),
                                            (str(MAX_BODY_BYTES + 1), 413)])
def test_a_missing_or_malformed_or_too_large_length_is_refused_before_reading(app, length, status):
    body = DeclaredOnly(1000)
    assert post_stream(app, body, length, **{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d"})[0] == status
    assert body.bytes_read == 0


def test_a_body_longer_than_the_limit_is_never_read_past_it():
    body = DeclaredOnly(30 << 20)  # a server that passes the stream on without a length check
    assert len(read_body(body)) == MAX_BODY_BYTES + 1 and body.bytes_read == MAX_BODY_BYTES + 1
