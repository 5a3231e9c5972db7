"""Webhook deliveries and the job queue: each delivery at most one job, each job claimed by one worker,
and at most one job running per issue.

A delivery id already seen makes no second job (GitHub redelivers under the same id), and a body
already brought under another delivery id within REPLAY_WINDOW_S is a replay and is refused. A
claimed job is leased; a worker that dies leaves its lease to run out, and the job resumes from
its last checkpoint.
"""
from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Sequence

from bot.app.store.database import Database
from bot.app.store.records import (DONE, FAILED, QUEUED, REPLAY_WINDOW_S, RUNNING, DeliveryRecord, Job, NewJob,
                                   Replayed)


class JobQueue(Database):
    """Deliveries and jobs (part of `Store`)."""

    def record_delivery(self, delivery_id: str, event: str, action: str | None, job: NewJob | None,
                        body_sha256: str | None = None) -> str | Replayed | None:
        """Remember a delivery and enqueue its job, atomically. Returns the job id; None for a
        duplicate delivery (GitHub redelivers) or when the event needs no job; `Replayed` for the
        same body under a new delivery id."""
        return self.record_deliveries([DeliveryRecord(delivery_id, event, action, job, body_sha256)])[0]

    def record_deliveries(self, records: Sequence[DeliveryRecord]) -> list[str | Replayed | None]:
        """`record_delivery` for many deliveries in one transaction, in a fixed number of statements
        however many there are (group commit).

        Two tables decide who is first. deliveries: a delivery id already there, or twice in this
        batch, gets no second job (GitHub redelivers under the same id, with the same body).
        delivery_bodies: the first new delivery id to bring an (event, body) claims it for
        REPLAY_WINDOW_S, and any other new id bringing it meanwhile is `Replayed` and not recorded
        at all."""
        if not records:
            return []
        now = self.clock()
        ids = sorted({r.delivery_id for r in records})
        in_ids = f"({', '.join('?' * len(ids))})"
        proposed = [uuid.uuid4().hex if record.job else None for record in records]
        job_rows = {job_id: _job_row(job_id, r.job, r.delivery_id, now)  # JSON made before the lock is taken
                    for r, job_id in zip(records, proposed) if job_id}
        with self.transaction() as tx:
            known = {row[0] for row in tx.execute(f"SELECT delivery_id FROM deliveries WHERE delivery_id IN {in_ids}",
                                                  ids)}
            claims = {}  # (event, hash) -> row: the batch's first new delivery of a body claims it
            for r in records:
                if r.body_sha256 is not None and r.delivery_id not in known:
                    claims.setdefault((r.event, r.body_sha256), (r.event, r.body_sha256, r.delivery_id, now))
            holders = self._claim_bodies(tx, list(claims.values()), now)
            replays = [None if r.delivery_id in known else _replay(r, holders) for r in records]
            fresh = [(r, job_id) for r, job_id, replay in zip(records, proposed, replays) if replay is None]
            delivery_rows = [(r.delivery_id, r.event, r.action, now, job_id) for r, job_id in fresh]
            owner = {}
            if delivery_rows:
                tx.execute("INSERT INTO deliveries (delivery_id, event, action, received_at, job_id) VALUES "
                           + _placeholders(len(delivery_rows), 5) + " ON CONFLICT (delivery_id) DO NOTHING",
                           [value for row in delivery_rows for value in row])
                owner = dict(tx.execute(f"SELECT delivery_id, job_id FROM deliveries WHERE delivery_id IN {in_ids}",
                                        ids).fetchall())
            won = [job_id is not None and replay is None and owner.get(r.delivery_id) == job_id
                   for r, job_id, replay in zip(records, proposed, replays)]
            new_jobs = [job_rows[job_id] for job_id, first in zip(proposed, won) if first]
            if new_jobs:
                tx.execute(_INSERT_JOB + _placeholders(len(new_jobs), len(new_jobs[0])),
                           [value for row in new_jobs for value in row])
        return [replay or (job_id if first else None) for job_id, first, replay in zip(proposed, won, replays)]

    @staticmethod
    def _claim_bodies(tx: sqlite3.Connection, claims: list[tuple], now: float) -> dict[tuple[str, str], str]:
        """Claim each (event, body hash) for its delivery id unless another id claimed it within
        REPLAY_WINDOW_S (an older claim is taken over); returns who holds each one now."""
        if not claims:
            return {}
        tx.execute("INSERT INTO delivery_bodies (event, body_sha256, delivery_id, received_at) VALUES "
                   + _placeholders(len(claims), 4) + " ON CONFLICT (event, body_sha256) DO UPDATE SET "
                   "delivery_id = excluded.delivery_id, received_at = excluded.received_at "
                   "WHERE delivery_bodies.received_at < ?",
                   [*(value for row in claims for value in row), now - REPLAY_WINDOW_S])
        hashes = sorted({row[1] for row in claims})
        rows = tx.execute(f"SELECT event, body_sha256, delivery_id FROM delivery_bodies WHERE body_sha256 IN "
                          f"({', '.join('?' * len(hashes))})", hashes).fetchall()
        return {(row[0], row[1]): row[2] for row in rows}

    def seen_delivery(self, delivery_id: str) -> bool:
        row = self._connect().execute("SELECT 1 FROM deliveries WHERE delivery_id = ?", (delivery_id,)).fetchone()
        return row is not None


    def claim(self, owner: str, lease_s: float) -> Job | None:
        """The oldest job ready to run, leased to `owner`: first running ones whose lease ran out
        (their worker died: the job resumes from its last checkpoint), then queued ones. A job whose
        issue (repo, number) has another job running under a live lease is passed over until that one
        ends: two jobs on one issue (a label and a `classify`) would each find no bot comment and
        each post one. Jobs with no issue (workflow runs) are not held back.

        Each try is one UPDATE that picks and takes the row itself, so workers never race for the
        same row and the write lock is held for one indexed statement. On SQLite that statement
        holds the database's one write lock from its first read, so the per-issue check and the
        take are one atomic step (PostgreSQL would need the issue locked for it). The lease carries
        a fresh token, which is how the claimant finds its row again without RETURNING. The outer
        WHERE repeats the condition so that on PostgreSQL a row taken meanwhile is not taken twice."""
        now = self.clock()
        token = f"{owner}/{uuid.uuid4().hex[:12]}"
        for ready, values in (("state = ? AND lease_until < ?", (RUNNING, now)),
                              ("state = ? AND not_before <= ?", (QUEUED, now))):
            taken = self._write(
                "UPDATE jobs SET state = ?, lease_owner = ?, lease_until = ?, attempts = attempts + 1, updated_at = ? "
                f"WHERE id = (SELECT id FROM jobs AS candidate WHERE {ready} AND {_ISSUE_FREE} "
                f"ORDER BY created_at LIMIT 1) AND {ready}",
                (RUNNING, token, now + lease_s, now, *values, RUNNING, now, *values))
            if taken:
                row = self._connect().execute("SELECT id FROM jobs WHERE state = ? AND lease_owner = ?",
                                              (RUNNING, token)).fetchone()
                return self.job(row["id"])
        return None

    def job(self, job_id: str) -> Job | None:
        row = self._connect().execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return None
        return Job(id=row["id"], kind=row["kind"], repo=row["repo"], installation_id=row["installation_id"],
                   number=row["number"], payload=json.loads(row["payload"]), progress=json.loads(row["progress"]),
                   state=row["state"], stage=row["stage"], attempts=row["attempts"], delivery_id=row["delivery_id"],
                   error=row["error"])

    def checkpoint(self, job: Job, stage: str, lease_s: float, **progress) -> None:
        """Record that `stage` is done (and what it produced); renews the lease."""
        job.progress.update(progress)
        job.stage = stage
        now = self.clock()
        self._write("UPDATE jobs SET stage = ?, progress = ?, lease_until = ?, updated_at = ? WHERE id = ?",
                    (stage, json.dumps(job.progress, separators=(",", ":")), now + lease_s, now, job.id))

    def finish(self, job: Job, error: str | None = None) -> None:
        self._write("UPDATE jobs SET state = ?, error = ?, lease_owner = NULL, lease_until = NULL, updated_at = ? "
                    "WHERE id = ?", (FAILED if error else DONE, error, self.clock(), job.id))

    def retry_later(self, job: Job, at: float, error: str) -> None:
        self._write("UPDATE jobs SET state = ?, not_before = ?, error = ?, lease_owner = NULL, lease_until = NULL, "
                    "updated_at = ? WHERE id = ?", (QUEUED, at, error, self.clock(), job.id))

    def job_counts(self) -> dict[str, int]:
        rows = self._connect().execute("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state").fetchall()
        return {row["state"]: row["n"] for row in rows}


# a candidate job whose issue has no other job running under a live lease (params: RUNNING, now)
_ISSUE_FREE = ("(candidate.number IS NULL OR NOT EXISTS (SELECT 1 FROM jobs AS busy WHERE busy.state = ? "
               "AND busy.lease_until >= ? AND busy.repo = candidate.repo AND busy.number = candidate.number "
               "AND busy.id <> candidate.id))")

_INSERT_JOB = ("INSERT INTO jobs (id, delivery_id, kind, repo, installation_id, number, payload, state, not_before, "
               "created_at, updated_at) VALUES ")


def _job_row(job_id: str, job: NewJob, delivery_id: str | None, now: float) -> tuple:
    payload = job.payload_json if job.payload_json is not None else json.dumps(job.payload, separators=(",", ":"))
    return (job_id, delivery_id, job.kind, job.repo, job.installation_id, job.number, payload, QUEUED, now, now, now)


def _replay(record: DeliveryRecord, body_holders: dict[tuple[str, str], str]) -> Replayed | None:
    holder = body_holders.get((record.event, record.body_sha256))
    return Replayed(holder) if holder is not None and holder != record.delivery_id else None


def _placeholders(rows: int, columns: int) -> str:
    """`(?, ?), (?, ?)`: a multi-row VALUES list (SQLite >= 3.7.11, PostgreSQL)."""
    row = "(" + ", ".join("?" * columns) + ")"
    return ", ".join([row] * rows)
