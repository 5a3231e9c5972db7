"""Webhook intake: verify, parse, route (pure; the Flask view in factory.py only wires these).

Order matters: the declared size is checked from the headers before the body is read
(`length_refusal`), and the HMAC signature over the raw body before anything parses it, so a
forged or oversized request costs at most one hash and has no side effect. A delivery then becomes
at most one job, when some feature's `parse` takes its event (bot/app/features: the union of their
routes); the features do the slow work later, so GitHub gets its answer well within its 10 s limit.

What a signed body may still not do: nest deeper than any GitHub payload (`MAX_JSON_DEPTH`), hold
an integer wider than 64 bits (`json_integer`), come in a content type GitHub does not send, or be a pull request dressed as an issue event. A signed
body sent again under a new delivery id (a captured request replayed) is refused by the store,
which remembers each body's hash (`Delivery.body_sha256`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qs

from bot.app import features
from bot.app.dispatch import issue_of_run_title
from bot.app.event import Event, payload_integer, payload_object
from bot.app.store import NewJob

MAX_BODY_BYTES = 25 << 20  # GitHub caps webhook payloads at 25 MB
SIGNATURE_PREFIX = "sha256="
# GitHub's payloads nest fewer than 10 levels. A bound far below the interpreter's recursion limit
# means a body accepted here also parses, and serializes, wherever a worker meets it again.
MAX_JSON_DEPTH = 64
MIN_JSON_INTEGER, MAX_JSON_INTEGER = -(2 ** 63), 2 ** 63 - 1  # SQLite's INTEGER (PostgreSQL's BIGINT)
JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"  # a webhook's "Content type" setting: payload=<JSON>
_CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    action: str | None
    payload: dict
    body_text: str | None = None  # the payload's JSON text as signed: the job stores it as is (no re-encoding)
    body_sha256: str | None = None  # of the raw body: the store refuses the same body under another delivery id

    @property
    def repo(self) -> str | None:
        name = payload_object(self.payload.get("repository")).get("full_name")
        return name if isinstance(name, str) else None

    @property
    def installation_id(self) -> int | None:
        return payload_integer(payload_object(self.payload.get("installation")).get("id"))

    @property
    def number(self) -> int | None:
        """The issue the delivery is about: the issue or PR, or the issue a runner run's title names."""
        for key in ("issue", "pull_request"):
            if isinstance(self.payload.get(key), dict):
                return payload_integer(self.payload[key].get("number"))
        title = payload_object(self.payload.get("workflow_run")).get("display_title")
        return issue_of_run_title(title) if isinstance(title, str) else None


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
    json_body = payload_json(headers.get("content-type"), body)
    if isinstance(json_body, Refusal):
        return json_body
    try:
        payload = json.loads(json_body, parse_int=json_integer)
    except IntegerOutOfRange as exc:
        return Refusal(400, f"body has an integer outside the 64-bit range GitHub's ids and numbers use ({exc})")
    except RecursionError:
        return Refusal(400, f"body nests deeper than {MAX_JSON_DEPTH} levels")
    except (ValueError, UnicodeDecodeError) as exc:
        return Refusal(400, f"body is not JSON: {exc}")
    if not isinstance(payload, dict):
        return Refusal(400, "body is not a JSON object")
    if _nests_deeper_than(payload, MAX_JSON_DEPTH):
        return Refusal(400, f"body nests deeper than {MAX_JSON_DEPTH} levels")
    action = payload.get("action")
    return Delivery(delivery_id, event, action if isinstance(action, str) else None, payload, _utf8(json_body),
                    hashlib.sha256(body).hexdigest())


def payload_json(content_type: str | None, body: bytes) -> bytes | Refusal:
    """The payload's JSON from a signed body: the body itself (`application/json`, or no type), or
    the `payload` field of a form body (a webhook set to `application/x-www-form-urlencoded`)."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type in ("", JSON_TYPE):
        return body
    if media_type != FORM_TYPE:
        return Refusal(415, f"Content-Type must be {JSON_TYPE} or {FORM_TYPE} (a webhook's content type setting)")
    try:
        fields = parse_qs(body.decode("ascii"), strict_parsing=True, max_num_fields=1, errors="strict")
    except ValueError as exc:  # UnicodeDecodeError included: a form body is ASCII, its values UTF-8
        return Refusal(400, f"form body is not payload=<JSON>: {exc}")
    values = fields.get("payload")
    if not values or len(fields) != 1:
        return Refusal(400, "form body is not payload=<JSON>")
    return values[0].encode("utf-8")


class IntegerOutOfRange(ValueError):
    """A JSON integer no GitHub id or number can be; its message is the integer's start."""


def json_integer(text: str) -> int:
    """A payload's integer, if it fits in 64 signed bits as every GitHub id and number does. A larger
    one (an issue number of 10**30) would only fail later, where the store writes it as an INTEGER."""
    if len(text.lstrip("-")) <= 19:  # longer is out of range, and never converted (int() is quadratic)
        value = int(text)
        if MIN_JSON_INTEGER <= value <= MAX_JSON_INTEGER:
            return value
    raise IntegerOutOfRange(text[:24] + ("..." if len(text) > 24 else ""))


def _nests_deeper_than(value: object, limit: int) -> bool:
    """Whether a parsed JSON value has containers more than `limit` deep (iterative: a recursive
    walk would meet the very limit it checks)."""
    pending = [(value, 1)]
    while pending:
        container, depth = pending.pop()
        if depth > limit:
            return True
        children = container.values() if isinstance(container, dict) else container
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _utf8(body: bytes) -> str | None:
    """GitHub sends UTF-8; a body JSON accepted in another encoding is re-encoded by the store."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def route(delivery: Delivery, bot_name: str) -> NewJob | None:
    """The job a delivery needs, or None: an event no feature takes is acknowledged and ignored.
    Cheap and pure: no I/O happens before the ack. The job's kind is the event's name."""
    event = Event(delivery.event, delivery.action, delivery.payload, bot_name)
    if not delivery.repo or not features.wanted(event):
        return None
    return NewJob(kind=delivery.event, repo=delivery.repo, payload=delivery.payload,
                  installation_id=delivery.installation_id, number=delivery.number, payload_json=delivery.body_text)
