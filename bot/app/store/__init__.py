"""The App's state, behind one package: SQLite by default, portable SQL so PostgreSQL can follow.

What it holds: webhook deliveries seen (dedup by delivery id, and by body hash against replays),
the job queue with each job's stage and progress (so a restart resumes a half-done job instead of
redoing or dropping it), the bot's comment id per issue/PR, maintainers' overrides, dispatched
runner jobs, once-only notices and failure fingerprints. Every feature is idempotent against it.

One concern a module: `schema` (the migrations), `database` (connections, transactions),
`queue` (deliveries and jobs), `issues` (per-issue state), `recorder` (the intake's batching
writer), `records` (what goes in and comes out). `Store` is all of it, for callers.

Portability rules kept here: text primary keys made in Python (no AUTOINCREMENT/SERIAL), times as
REAL epoch seconds, `INSERT ... ON CONFLICT DO NOTHING/UPDATE` (SQLite >= 3.24, PostgreSQL >= 9.5),
no RETURNING, no SQLite-only functions. Only the PRAGMAs in `database` and the `?` placeholders are
SQLite-specific. Migrations are numbered and applied in order, each in its own transaction.

Writes are short, because SQLite has one write lock for the whole file and the web process and the
worker processes share it: a write that is one statement runs as its own transaction, so the lock
is held only inside SQLite, never while Python waits for the GIL between statements; the webhook
intake commits its deliveries in batches from one thread (`DeliveryRecorder`), so request threads
never queue on the lock itself (SQLite's busy handler makes waiters sleep-poll with growing sleeps,
up to 100 ms each: many threads waiting that way was the intake's latency tail).
"""
from __future__ import annotations

from bot.app.store.issues import IssueState
from bot.app.store.queue import JobQueue
from bot.app.store.recorder import INTAKE_BUSY_TIMEOUT_S, INTAKE_WAIT_S, DeliveryRecorder
from bot.app.store.records import (DONE, FAILED, QUEUED, REPLAY_WINDOW_S, RUNNING, DeliveryRecord, Job, NewJob,
                                   Replayed, RunnerJob, StoreBusy)
from bot.app.store.schema import MIGRATIONS

__all__ = ["DONE", "FAILED", "INTAKE_BUSY_TIMEOUT_S", "INTAKE_WAIT_S", "MIGRATIONS", "QUEUED", "REPLAY_WINDOW_S",
           "RUNNING", "DeliveryRecord", "DeliveryRecorder", "Job", "NewJob", "Replayed", "RunnerJob", "Store",
           "StoreBusy"]


class Store(JobQueue, IssueState):
    """Deliveries, jobs and per-issue state in one SQLite file (see the package docstring).
    Thread-safe: each thread gets its own connection."""
