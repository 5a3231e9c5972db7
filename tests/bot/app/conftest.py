"""The App under test: a Flask test client, the fake GitHub (tests/fakes/github.py) behind
`responses`, a fake clock.

Every REST call a test makes, and every answer the fake gives, is checked against GitHub's OpenAPI
description when the test ends (tests/contract/openapi.py): a fake that drifts from the real API
fails the test that used it.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest
import responses
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.app.factory import create_app
from bot.app.github import AppCredentials, GitHub
from bot.app.settings import Settings
from bot.app.store import Store
from bot.app.intake import signature_for
from tests.fakes.github import API, FakeGitHub

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SECRET = "It's a Secret to Everybody"
FORM = "application/x-www-form-urlencoded"


class FakeClock:
    """Time that moves only when a test (or a sleeping retry) says so."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture(scope="session")
def private_key_path(tmp_path_factory) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("app") / "app.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake():
    """The fake GitHub; on teardown every recorded call and answer must match GitHub's REST description.

    The webhook fixtures' `maintainer` (who labels issue 12 in issues_labeled.json) has the triage role,
    as whoever labels issues does; a test that needs another role for them sets it."""
    github = FakeGitHub()
    github.permissions["maintainer"] = "triage"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        github.install(rsps)
        yield github
    problems = github.contract_problems()
    assert not problems, "exchanges that GitHub's REST API does not have:\n" + "\n".join(problems)


@pytest.fixture
def settings(tmp_path, private_key_path) -> Settings:
    return Settings(webhook_secret=SECRET, app_id="31337", private_key_path=str(private_key_path),
                    db_path=str(tmp_path / "app.sqlite3"), api_url=API, workers=1)


@pytest.fixture
def github_for(settings, clock):
    credentials = AppCredentials(settings.app_id, settings.private_key, settings.api_url, clock=clock, sleep=clock.sleep)
    return lambda installation_id: GitHub(settings.api_url, credentials.installation(installation_id),
                                          sleep=clock.sleep, clock=clock, bot_login=settings.bot_login)


@pytest.fixture
def make_app(settings, github_for, clock, classifier):
    def build(store: Store | None = None):
        return create_app(settings, store=store or Store(settings.db_path, clock=clock), github_for=github_for,
                          classifier=classifier, start_workers=False, clock=clock)
    return build


@pytest.fixture
def app(make_app):
    return make_app()


def webhook_payload(name: str) -> dict:
    return json.loads((FIXTURES / "webhooks" / f"{name}.json").read_text(encoding="utf-8"))


EVENTS = {"issues": "issues", "issue_comment": "issue_comment", "workflow_run": "workflow_run", "ping": "ping"}


def event_for(name: str) -> str:
    return next(event for prefix, event in EVENTS.items() if name.startswith(prefix))


@pytest.fixture
def deliver(app):
    """POST a signed delivery (a fixture name or a payload) to /webhook; returns the response."""
    def send(payload, event: str | None = None, delivery_id: str | None = None, secret: str = SECRET,
             client=None, body: bytes | None = None, signature: str | None = None,
             content_type: str = "application/json"):
        if isinstance(payload, str):
            event = event or event_for(payload)
            payload = webhook_payload(payload)
        raw = body if body is not None else json.dumps(payload).encode()
        if body is None and content_type == FORM:  # what GitHub sends for the form content type
            raw = urlencode({"payload": raw.decode()}).encode()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
                   "X-Hub-Signature-256": signature if signature is not None else signature_for(secret, raw),
                   "Content-Type": content_type, "User-Agent": "GitHub-Hookshot/044aadd"}
        return (client or app).test_client().post("/webhook", data=raw, headers=headers)
    return send


def drain(app) -> int:
    return app.extensions["pt2_triage"].drain()


def graph_break_report_zip(job_key: str, issue_number: int = 12) -> bytes:
    import io
    import zipfile

    report = json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))
    report["issue_number"] = issue_number
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report.json", json.dumps(report))
        archive.writestr("comment.md", "ignored")
    return buffer.getvalue()
