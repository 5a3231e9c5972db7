"""Webhook intake: verify, parse, route (pure; the Flask view in app.py only wires these).

Order matters: the declared size is checked from the headers before the body is read
(`length_refusal`), and the HMAC signature over the raw body before anything parses it, so a
forged or oversized request costs at most one hash and has no side effect. A delivery then becomes
at most one job, chosen here from the event and action (`ROUTES`); the handler does the slow work
later, so GitHub gets its answer well within its 10-second limit.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass

from .store import NewJob

MAX_BODY_BYTES = 25 << 20  # GitHub caps webhook payloads at 25 MB
SIGNATURE_PREFIX = "sha256="
_CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")

# (event, action) -> job kind. An event not listed is acknowledged and ignored.
ROUTES = {
    ("issues", "labeled"): "issue_labeled",
    ("issues", "opened"): "issue_text",
    ("issues", "edited"): "issue_text",
    ("issue_comment", "created"): "comment_command",
    ("workflow_run", "completed"): "workflow_run",
}


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    action: str | None
    payload: dict
    body_text: str | None = None  # the signed body as text: the job stores it as is (no re-encoding)

    @property
    def repo(self) -> str | None:
        return (self.payload.get("repository") or {}).get("full_name")

    @property
    def installation_id(self) -> int | None:
        return (self.payload.get("installation") or {}).get("id")

    @property
    def number(self) -> int | None:
        for key in ("issue", "pull_request"):
            if isinstance(self.payload.get(key), dict):
                return self.payload[key].get("number")
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a request is not a delivery we accept; `status` is the HTTP answer."""

    status: int
    message: str


def signature_for(secret: str, body: bytes) -> str:
    return SIGNATURE_PREFIX + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_signature(secrets: tuple[str, ...], body: bytes, header: str | None) -> bool:
    """Constant-time check of `X-Hub-Signature-256` against each configured secret (more than one
    only while a secret is being rotated)."""
    if not header or not header.startswith(SIGNATURE_PREFIX):
        return False
    return any(hmac.compare_digest(signature_for(secret, body), header) for secret in secrets if secret)


def length_refusal(headers: dict[str, str]) -> Refusal | None:
    """The refusal for a body that must not be read at all, decided from `Content-Length` alone
    (before a byte of the body is read), or None. GitHub always sends the length; a request
    without one (e.g. chunked) or with a malformed one is refused rather than read to find out."""
    declared = headers.get("content-length")
    if declared is None:
        return Refusal(411, "Content-Length is required")
    if not _CONTENT_LENGTH.fullmatch(declared.strip()):
        return Refusal(400, "Content-Length is not a byte count")
    if int(declared) > MAX_BODY_BYTES:
        return Refusal(413, "payload larger than GitHub's 25 MB limit")
    return None


def parse_delivery(headers: dict[str, str], body: bytes, secrets: tuple[str, ...]) -> Delivery | Refusal:
    """A verified, parsed delivery, or the refusal to answer with. `headers` keys are lower-case."""
    if len(body) > MAX_BODY_BYTES:
        return Refusal(413, "payload larger than GitHub's 25 MB limit")
    if not verify_signature(secrets, body, headers.get("x-hub-signature-256")):
        return Refusal(401, "missing or invalid X-Hub-Signature-256")
    delivery_id = headers.get("x-github-delivery", "").strip()
    event = headers.get("x-github-event", "").strip()
    if not delivery_id or not event or len(delivery_id) > 100 or len(event) > 100:
        return Refusal(400, "X-GitHub-Delivery and X-GitHub-Event headers are required")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return Refusal(400, f"body is not JSON: {exc}")
    if not isinstance(payload, dict):
        return Refusal(400, "body is not a JSON object")
    action = payload.get("action")
    return Delivery(delivery_id, event, action if isinstance(action, str) else None, payload, _utf8(body))


def _utf8(body: bytes) -> str | None:
    """GitHub sends UTF-8; a body JSON accepted in another encoding is re-encoded by the store."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def route(delivery: Delivery, bot_name: str) -> NewJob | None:
    """The job a delivery needs, or None. Cheap filters only: no I/O happens before the ack."""
    kind = ROUTES.get((delivery.event, delivery.action))
    if kind is None or not delivery.repo:
        return None
    payload = delivery.payload
    if kind == "comment_command":
        comment = payload.get("comment") or {}
        if (comment.get("user") or {}).get("type") == "Bot" or f"@{bot_name}".lower() not in (comment.get("body") or "").lower():
            return None
    if kind == "issue_labeled" and not (payload.get("label") or {}).get("name"):
        return None
    if kind == "issue_text" and (payload.get("issue") or {}).get("pull_request"):
        return None
    return NewJob(kind=kind, repo=delivery.repo, payload=payload, installation_id=delivery.installation_id,
                  number=delivery.number, payload_json=delivery.body_text)
