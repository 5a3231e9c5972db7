"""What a feature decided to do, as plain values: a Plan is the steps to carry out, in order.

A step is a frozen record of one write (a comment, labels, a dispatch, a row in the store) that
knows how to carry itself out. `carry_out` runs a plan's steps and checkpoints the job after each
one that names a `stage`, so a job retried after a crash skips the GitHub writes it already made:
no comment is posted twice, no run dispatched twice. A step without a stage writes only to the
store in a way that is safe to repeat.

Each step's `run(gh, store)` may return values to keep in the job's progress with its checkpoint.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bot.app.github import GitHub

if TYPE_CHECKING:
    from bot.app.context import JobStore

log = logging.getLogger("pt2_triage.plan")


class Step(Protocol):
    stage: str  # the job's checkpoint after this step; "" for a step that is safe to repeat

    def run(self, gh: GitHub, store: "JobStore") -> dict | None: ...


@dataclass(frozen=True)
class Plan:
    """The steps a feature decided on; none, with the `reason`, when the event needs nothing."""

    steps: tuple[Step, ...] = ()
    reason: str = ""

    @classmethod
    def nothing(cls, reason: str) -> "Plan":
        return cls((), reason)


def carry_out(plan: Plan, gh: GitHub, store: "JobStore") -> None:
    """Run the plan's steps in order, each at most once per job: a step whose stage the job has
    already checkpointed is skipped, and the checkpoint follows each step that names one."""
    for step in plan.steps:
        if step.stage and store.done(step.stage):
            continue
        progress = step.run(gh, store) or {}
        if step.stage:
            store.checkpoint(step.stage, **progress)


# ---------------------------------------------------------------- the steps every feature may use

@dataclass(frozen=True)
class UpsertComment:
    """The bot's one marked comment on an issue: edited in place, posted only when there is none."""

    repo: str
    number: int
    body: str
    marker: str
    known_id: int | None
    stage: str = "comment"
    progress: tuple[tuple[str, str], ...] = ()  # more values to keep with the checkpoint

    def run(self, gh: GitHub, store: "JobStore") -> dict:
        comment = gh.upsert_comment(self.repo, self.number, self.body, self.marker, known_id=self.known_id)
        store.remember_comment(self.repo, self.number, comment.id)
        return {"comment_id": comment.id, **dict(self.progress)}


@dataclass(frozen=True)
class Reply:
    """A plain reply (help, a refused or malformed command): posted once per job.

    The checkpoint alone cannot promise that: a 5xx may come after GitHub posted it, and a worker
    may die between the post and the checkpoint. So the reply carries its job and stage as its id,
    and GitHub is asked whether that reply is there before it is posted (again)."""

    repo: str
    number: int
    body: str
    stage: str = "replied"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        job = getattr(store, "job", None)
        gh.post_comment(self.repo, self.number, self.body, reply_id=f"{job.id}/{self.stage}" if job else None)


@dataclass(frozen=True)
class React:
    repo: str
    comment_id: int
    content: str = "eyes"
    stage: str = "reacted"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        gh.react(self.repo, self.comment_id, self.content)


@dataclass(frozen=True)
class AddLabels:
    repo: str
    number: int
    labels: tuple[str, ...]
    stage: str = "labeled"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        gh.add_labels(self.repo, self.number, list(self.labels))


@dataclass(frozen=True)
class Once:
    """A step said once per issue, ever (a suggestion): the store's notice is claimed first and
    given back when the step fails, so a retry can say it."""

    repo: str
    number: int
    notice: str
    step: Step
    stage: str = ""

    def run(self, gh: GitHub, store: "JobStore") -> None:
        if not store.claim_notice(self.repo, self.number, self.notice):
            return
        try:
            self.step.run(gh, store)
        except Exception:
            store.release_notice(self.repo, self.number, self.notice)
            raise


@dataclass(frozen=True)
class SetOverride:
    """A maintainer's override (category, test file), remembered for later runs."""

    repo: str
    number: int
    name: str
    value: str
    set_by: str
    stage: str = ""

    def run(self, gh: GitHub, store: "JobStore") -> None:
        store.set_override(self.repo, self.number, self.name, self.value, self.set_by)


@dataclass(frozen=True)
class RecordFingerprints:
    """Count failure signatures: (signature, category, reference) each; once per job."""

    repo: str
    fingerprints: tuple[tuple[str, str, str], ...]
    stage: str = "fingerprinted"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        for signature, category, reference in self.fingerprints:
            store.record_fingerprint(self.repo, signature, category, reference)
