"""The records the store hands out and takes in, and its states and limits."""
from __future__ import annotations

from dataclasses import dataclass

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"

# How long a delivered body is remembered against replays under a new delivery id. GitHub's payloads
# carry timestamps and ids, so two real events never share a body; a replay of one after this long
# is taken as new.
REPLAY_WINDOW_S = 24 * 3600.0


class StoreBusy(Exception):
    """The store could not take a write in time (lock held too long, or the intake is backed up):
    the caller should answer 503 with Retry-After rather than make GitHub wait."""


@dataclass(frozen=True)
class NewJob:
    kind: str
    repo: str
    payload: dict
    installation_id: int | None = None
    number: int | None = None
    payload_json: str | None = None  # `payload` as JSON text when the caller has it (a webhook's body)


@dataclass
class Job:
    id: str
    kind: str
    repo: str
    installation_id: int | None
    number: int | None
    payload: dict
    progress: dict
    state: str
    stage: str
    attempts: int
    delivery_id: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class RunnerJob:
    job_key: str
    repo: str
    number: int
    installation_id: int | None
    device: str
    state: str
    draft_pr: bool
    requested_by: str | None
    requested_at: float
    run_id: int | None = None


@dataclass(frozen=True)
class DeliveryRecord:
    """One webhook delivery to remember, with the job it carries (None: an event we ignore)."""

    delivery_id: str
    event: str
    action: str | None
    job: NewJob | None
    body_sha256: str | None = None  # the raw body's hash; None: no replay check


@dataclass(frozen=True)
class Replayed:
    """`record_deliveries`' answer for a body that `first_delivery_id` already brought within
    REPLAY_WINDOW_S: a captured delivery sent again under a new id. Nothing of it was recorded."""

    first_delivery_id: str
