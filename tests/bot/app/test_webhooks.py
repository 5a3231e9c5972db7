"""Webhook intake: nothing happens unless the signature is right; every delivery is at most one job."""
from __future__ import annotations

import io
import json
from urllib.parse import urlencode

import pytest
from werkzeug.test import EnvironBuilder, run_wsgi_app

from bot.app.factory import read_body
from bot.app.intake import (MAX_BODY_BYTES, MAX_JSON_DEPTH, Delivery, parse_delivery, route, signature_for,
                          verify_signature)

from .conftest import FORM, SECRET, drain, webhook_payload


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


def test_a_runner_runs_report_is_queued_as_a_job_on_the_issue_its_title_names():
    """So it waits behind a label or `classify` job on that issue instead of racing it to the comment."""
    payload = webhook_payload("workflow_run_completed_runner")
    payload["workflow_run"]["display_title"] = "pt2-triage aaa111 (issue 12, cpu)"
    job = route(Delivery("d", "workflow_run", "completed", payload), "pt2-triage")
    assert (job.kind, job.number) == ("workflow_run", 12)
    payload["workflow_run"]["display_title"] = "docs: mention pt2-triage aaa111 (issue 12, cpu)"
    assert route(Delivery("d", "workflow_run", "completed", payload), "pt2-triage").number is None


def test_route_ignores_comments_not_addressed_to_the_bot_and_bots():
    payload = webhook_payload("issue_comment_created")
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage").kind == "issue_comment"
    payload["comment"]["body"] = "LGTM"
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage") is None
    payload["comment"]["body"] = "@pt2-triage run"
    payload["comment"]["user"]["type"] = "Bot"
    assert route(Delivery("d", "issue_comment", "created", payload), "pt2-triage") is None


# -- hostile input: size, nesting, content type

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


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200_000])
def test_deeply_nested_json_with_a_valid_signature_is_a_400(app, deliver, depth):
    body = b'{"action": "labeled", "issue": ' + b"[" * depth + b"]" * depth + b"}"
    response = deliver(None, event="issues", body=body)
    assert response.status_code == 400 and "nests deeper" in response.json["error"]
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


@pytest.mark.parametrize("where, digits", [("issue", str(10 ** 30)), ("installation", str(2 ** 70)),
                                           ("issue", str(-(2 ** 63) - 1)), ("comment", "9" * 5000)])
def test_an_integer_wider_than_64_bits_is_a_400_not_a_500(app, deliver, where, digits):
    payload = webhook_payload("issue_comment_created")
    payload[where]["number" if where == "issue" else "id"] = 987654321
    body = json.dumps(payload).replace("987654321", digits).encode()
    response = deliver(None, event="issue_comment", body=body)
    assert response.status_code == 400 and "64-bit" in response.json["error"]
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


def test_integers_as_wide_as_64_bits_are_accepted(app, deliver):
    from bot.app.intake import IntegerOutOfRange, json_integer

    assert [json_integer(str(n)) for n in (2 ** 63 - 1, -(2 ** 63), 0, -1)] == [2 ** 63 - 1, -(2 ** 63), 0, -1]
    with pytest.raises(IntegerOutOfRange):
        json_integer(str(2 ** 63))
    payload = webhook_payload("issue_comment_created")
    payload["installation"]["id"], payload["comment"]["id"] = 2 ** 63 - 1, -(2 ** 63)
    assert deliver(payload, "issue_comment").status_code == 202


def test_nesting_as_deep_as_github_payloads_go_is_accepted():
    payload = {"action": "completed", "workflow_run": {"head_repository": {"owner": {"plan": {"x": [[{}]]}}}}}
    body = json.dumps(payload).encode()
    headers = {"x-hub-signature-256": signature_for(SECRET, body), "x-github-delivery": "d", "x-github-event": "w"}
    assert parse_delivery(headers, body, (SECRET,)).payload == payload


@pytest.mark.parametrize("content_type", ["application/json", FORM, "application/json; charset=utf-8"])
def test_both_of_githubs_content_types_make_the_same_job(app, deliver, content_type):
    response = deliver("issues_labeled", content_type=content_type)
    assert response.status_code == 202, response.json
    job = app.extensions["pt2_triage"].services.store.job(response.json["job"])
    assert job.payload == webhook_payload("issues_labeled") and job.number == 12


def test_a_form_delivery_is_verified_over_the_form_body(deliver):
    form = urlencode({"payload": json.dumps(webhook_payload("issues_labeled"))}).encode()
    signed_json = signature_for(SECRET, json.dumps(webhook_payload("issues_labeled")).encode())
    assert deliver(None, event="issues", body=form, content_type=FORM, signature=signed_json).status_code == 401


@pytest.mark.parametrize("form", [b"payload=%7B%7D&payload=%7B%7D", b"payload=%7B%7D&other=1", b"other=%7B%7D",
                                  b"payload=%FF", b"payload", "payload=é".encode()])
def test_a_form_body_that_is_not_one_payload_field_is_a_400(app, deliver, form):
    response = deliver(None, event="issues", body=form, content_type=FORM)
    assert response.status_code == 400 and "payload=<JSON>" in response.json["error"]


def test_a_content_type_github_does_not_send_is_a_415(app, deliver):
    response = deliver("issues_labeled", content_type="text/plain")
    assert response.status_code == 415 and FORM in response.json["error"]
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


def test_members_of_the_wrong_json_type_are_ignored_not_a_500(app, deliver):
    payload = webhook_payload("issues_labeled") | {"repository": ["octo-org/octo-repo"], "issue": "12"}
    assert deliver(payload, "issues").json["status"] == "ignored"
    payload = webhook_payload("issue_comment_created")
    payload["comment"]["body"] = {"text": "@pt2-triage run"}
    assert deliver(payload, "issue_comment").json["status"] == "ignored"


def test_route_skips_issue_events_for_pull_requests():
    payload = webhook_payload("issues_labeled")
    assert route(Delivery("d", "issues", "labeled", payload), "pt2-triage").kind == "issues"
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/octo-org/octo-repo/pulls/12"}
    assert route(Delivery("d", "issues", "labeled", payload), "pt2-triage") is None
    assert route(Delivery("d", "issues", "opened", payload | {"action": "opened"}), "pt2-triage") is None
