"""The App's state, behind one module: SQLite by default, portable SQL so PostgreSQL can follow.

What it holds: webhook deliveries seen (dedup), the job queue with each job's stage and progress
(so a restart resumes a half-done job instead of redoing or dropping it), the bot's comment id per
issue/PR, maintainers' overrides, dispatched runner jobs, once-only notices and failure
fingerprints. Every handler is idempotent against it.

Portability rules kept here: text primary keys made in Python (no AUTOINCREMENT/SERIAL), times as
REAL epoch seconds, `INSERT ... ON CONFLICT DO NOTHING/UPDATE` (SQLite >= 3.24, PostgreSQL >= 9.5),
no RETURNING, no SQLite-only functions. Only `_connect` and the `?` placeholders are SQLite-specific.
Migrations are numbered and applied in order, each in its own transaction.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

log = logging.getLogger("pt2_triage.store")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the initial schema
    (
        """CREATE TABLE deliveries (
            delivery_id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            action TEXT,
            received_at REAL NOT NULL,
            job_id TEXT
        )""",
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            delivery_id TEXT UNIQUE,
            kind TEXT NOT NULL,
            repo TEXT NOT NULL,
            installation_id INTEGER,
            number INTEGER,
            payload TEXT NOT NULL,
            progress TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL,
            stage TEXT NOT NULL DEFAULT 'new',
            attempts INTEGER NOT NULL DEFAULT 0,
            not_before REAL NOT NULL,
            lease_owner TEXT,
            lease_until REAL,
            error TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        "CREATE INDEX jobs_ready ON jobs (state, not_before)",
        """CREATE TABLE comments (
            repo TEXT NOT NULL,
            number INTEGER NOT NULL,
            purpose TEXT NOT NULL,
            comment_id INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (repo, number, purpose)
        )""",
        """CREATE TABLE overrides (
            repo TEXT NOT NULL,
            number INTEGER NOT NULL,
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            set_by TEXT NOT NULL,
            set_at REAL NOT NULL,
            PRIMARY KEY (repo, number, name)
        )""",
        """CREATE TABLE runner_jobs (
            job_key TEXT PRIMARY KEY,
            repo TEXT NOT NULL,
            number INTEGER NOT NULL,
            installation_id INTEGER,
            device TEXT NOT NULL,
            state TEXT NOT NULL,
            draft_pr INTEGER NOT NULL DEFAULT 0,
            requested_by TEXT,
            requested_at REAL NOT NULL,
            completed_at REAL,
            run_id INTEGER
        )""",
        "CREATE INDEX runner_jobs_issue ON runner_jobs (repo, number)",
        """CREATE TABLE notices (
            repo TEXT NOT NULL,
            number INTEGER NOT NULL,
            kind TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (repo, number, kind)
        )""",
        """CREATE TABLE reports (
            repo TEXT NOT NULL,
            number INTEGER NOT NULL,
            report TEXT NOT NULL,
            run_id INTEGER,
            updated_at REAL NOT NULL,
            PRIMARY KEY (repo, number)
        )""",
        """CREATE TABLE fingerprints (
            repo TEXT NOT NULL,
            signature TEXT NOT NULL,
            category TEXT NOT NULL,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            occurrences INTEGER NOT NULL,
            last_reference TEXT,
            PRIMARY KEY (repo, signature)
        )""",
    ),
)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


@dataclass(frozen=True)
class NewJob:
    kind: str
    repo: str
    payload: dict
    installation_id: int | None = None
    number: int | None = None


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


@dataclass
class Store:
    """Thread-safe: each thread gets its own connection (SQLite in WAL mode, so readers never block)."""

    path: str
    clock: Callable[[], float] = time.time
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self):
        self.migrate()

    # -- plumbing

    def _connect(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA busy_timeout = 30000")
            if self.path != ":memory:":
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
            self._local.connection = connection
        return connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit; `BEGIN IMMEDIATE` takes the write lock up front, so no upgrade deadlocks."""
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def migrate(self) -> int:
        """Apply the migrations this database lacks; returns the schema version."""
        connection = self._connect()
        connection.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        with self.transaction() as tx:
            current = tx.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0
            for version, statements in enumerate(MIGRATIONS, start=1):
                if version <= current:
                    continue
                for statement in statements:
                    tx.execute(statement)
                tx.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (version, self.clock()))
                log.info("store %s: migrated to schema version %d", self.path, version)
        return len(MIGRATIONS)

    def schema_version(self) -> int:
        return self._connect().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0

    # -- deliveries and the job queue

    def record_delivery(self, delivery_id: str, event: str, action: str | None, job: NewJob | None) -> str | None:
        """Remember a delivery and enqueue its job, atomically. Returns the job id; None for a
        duplicate delivery (GitHub redelivers) or when the event needs no job."""
        now = self.clock()
        with self.transaction() as tx:
            inserted = tx.execute(
                "INSERT INTO deliveries (delivery_id, event, action, received_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (delivery_id) DO NOTHING", (delivery_id, event, action, now)).rowcount
            if not inserted or job is None:
                return None
            job_id = self._insert_job(tx, job, delivery_id, now)
            tx.execute("UPDATE deliveries SET job_id = ? WHERE delivery_id = ?", (job_id, delivery_id))
            return job_id

    def seen_delivery(self, delivery_id: str) -> bool:
        row = self._connect().execute("SELECT 1 FROM deliveries WHERE delivery_id = ?", (delivery_id,)).fetchone()
        return row is not None

    def enqueue(self, job: NewJob) -> str:
        """A job that no delivery carries (follow-ups a handler schedules)."""
        with self.transaction() as tx:
            return self._insert_job(tx, job, None, self.clock())

    def _insert_job(self, tx, job: NewJob, delivery_id: str | None, now: float) -> str:
        job_id = uuid.uuid4().hex
        tx.execute(
            "INSERT INTO jobs (id, delivery_id, kind, repo, installation_id, number, payload, state, not_before, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, delivery_id, job.kind, job.repo, job.installation_id, job.number,
             json.dumps(job.payload, separators=(",", ":")), QUEUED, now, now, now))
        return job_id

    def claim(self, owner: str, lease_s: float) -> Job | None:
        """The oldest job ready to run, leased to `owner`: queued ones, and running ones whose lease
        ran out (their worker died: the job resumes from its last checkpoint)."""
        now = self.clock()
        connection = self._connect()
        for _ in range(5):
            row = connection.execute(
                "SELECT id FROM jobs WHERE (state = ? AND not_before <= ?) OR (state = ? AND lease_until < ?) "
                "ORDER BY created_at LIMIT 1", (QUEUED, now, RUNNING, now)).fetchone()
            if row is None:
                return None
            with self.transaction() as tx:
                taken = tx.execute(
                    "UPDATE jobs SET state = ?, lease_owner = ?, lease_until = ?, attempts = attempts + 1, updated_at = ? "
                    "WHERE id = ? AND ((state = ? AND not_before <= ?) OR (state = ? AND lease_until < ?))",
                    (RUNNING, owner, now + lease_s, now, row["id"], QUEUED, now, RUNNING, now)).rowcount
            if taken:
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
        with self.transaction() as tx:
            tx.execute("UPDATE jobs SET stage = ?, progress = ?, lease_until = ?, updated_at = ? WHERE id = ?",
                       (stage, json.dumps(job.progress, separators=(",", ":")), now + lease_s, now, job.id))

    def finish(self, job: Job, error: str | None = None) -> None:
        with self.transaction() as tx:
            tx.execute("UPDATE jobs SET state = ?, error = ?, lease_owner = NULL, lease_until = NULL, updated_at = ? "
                       "WHERE id = ?", (FAILED if error else DONE, error, self.clock(), job.id))

    def retry_later(self, job: Job, at: float, error: str) -> None:
        with self.transaction() as tx:
            tx.execute("UPDATE jobs SET state = ?, not_before = ?, error = ?, lease_owner = NULL, lease_until = NULL, "
                       "updated_at = ? WHERE id = ?", (QUEUED, at, error, self.clock(), job.id))

    def job_counts(self) -> dict[str, int]:
        rows = self._connect().execute("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state").fetchall()
        return {row["state"]: row["n"] for row in rows}

    def next_ready_at(self) -> float | None:
        row = self._connect().execute(
            "SELECT MIN(not_before) FROM jobs WHERE state = ?", (QUEUED,)).fetchone()
        return row[0]

    # -- comments, overrides, notices

    def comment_id(self, repo: str, number: int, purpose: str = "report") -> int | None:
        row = self._connect().execute("SELECT comment_id FROM comments WHERE repo = ? AND number = ? AND purpose = ?",
                                      (repo, number, purpose)).fetchone()
        return row["comment_id"] if row else None

    def remember_comment(self, repo: str, number: int, comment_id: int, purpose: str = "report") -> None:
        with self.transaction() as tx:
            tx.execute("INSERT INTO comments (repo, number, purpose, comment_id, updated_at) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (repo, number, purpose) DO UPDATE SET comment_id = excluded.comment_id, "
                       "updated_at = excluded.updated_at", (repo, number, purpose, comment_id, self.clock()))

    def set_override(self, repo: str, number: int, name: str, value: str, set_by: str) -> None:
        with self.transaction() as tx:
            tx.execute("INSERT INTO overrides (repo, number, name, value, set_by, set_at) VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (repo, number, name) DO UPDATE SET value = excluded.value, "
                       "set_by = excluded.set_by, set_at = excluded.set_at",
                       (repo, number, name, value, set_by, self.clock()))

    def overrides(self, repo: str, number: int) -> dict[str, str]:
        rows = self._connect().execute("SELECT name, value FROM overrides WHERE repo = ? AND number = ?",
                                       (repo, number)).fetchall()
        return {row["name"]: row["value"] for row in rows}

    def claim_notice(self, repo: str, number: int, kind: str) -> bool:
        """True the first time only: for things the bot says once per issue (suggestions, config errors)."""
        with self.transaction() as tx:
            return bool(tx.execute("INSERT INTO notices (repo, number, kind, created_at) VALUES (?, ?, ?, ?) "
                                   "ON CONFLICT (repo, number, kind) DO NOTHING",
                                   (repo, number, kind, self.clock())).rowcount)

    def release_notice(self, repo: str, number: int, kind: str) -> None:
        """Undo `claim_notice` when saying it failed, so a retry can say it."""
        with self.transaction() as tx:
            tx.execute("DELETE FROM notices WHERE repo = ? AND number = ? AND kind = ?", (repo, number, kind))

    # -- the latest report per issue (for overrides, draft-pr and rerun)

    def save_report(self, repo: str, number: int, report_json: str, run_id: int | None) -> None:
        with self.transaction() as tx:
            tx.execute("INSERT INTO reports (repo, number, report, run_id, updated_at) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (repo, number) DO UPDATE SET report = excluded.report, run_id = excluded.run_id, "
                       "updated_at = excluded.updated_at", (repo, number, report_json, run_id, self.clock()))

    def latest_report(self, repo: str, number: int) -> str | None:
        row = self._connect().execute("SELECT report FROM reports WHERE repo = ? AND number = ?",
                                      (repo, number)).fetchone()
        return row["report"] if row else None

    # -- runner jobs (dispatched workflow runs)

    def add_runner_job(self, job_key: str, repo: str, number: int, installation_id: int | None, device: str,
                       draft_pr: bool, requested_by: str | None) -> None:
        with self.transaction() as tx:
            tx.execute("INSERT INTO runner_jobs (job_key, repo, number, installation_id, device, state, draft_pr, "
                       "requested_by, requested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_key) DO NOTHING",
                       (job_key, repo, number, installation_id, device, "dispatched", int(draft_pr), requested_by,
                        self.clock()))

    def runner_job(self, job_key: str) -> RunnerJob | None:
        row = self._connect().execute("SELECT * FROM runner_jobs WHERE job_key = ?", (job_key,)).fetchone()
        return _runner_job(row) if row else None

    def runner_jobs_for(self, repo: str, number: int) -> list[RunnerJob]:
        rows = self._connect().execute("SELECT * FROM runner_jobs WHERE repo = ? AND number = ? ORDER BY requested_at DESC",
                                       (repo, number)).fetchall()
        return [_runner_job(row) for row in rows]

    def pending_runner_jobs(self, repo: str) -> list[RunnerJob]:
        rows = self._connect().execute("SELECT * FROM runner_jobs WHERE repo = ? AND state = ? ORDER BY requested_at DESC",
                                       (repo, "dispatched")).fetchall()
        return [_runner_job(row) for row in rows]

    def complete_runner_job(self, job_key: str, run_id: int, state: str) -> bool:
        """Mark a runner job done by `run_id`; False when that run was already published (redelivery)."""
        with self.transaction() as tx:
            return bool(tx.execute("UPDATE runner_jobs SET state = ?, run_id = ?, completed_at = ? "
                                   "WHERE job_key = ? AND (run_id IS NULL OR run_id <> ?)",
                                   (state, run_id, self.clock(), job_key, run_id)).rowcount)

    # -- failure fingerprints

    def record_fingerprint(self, repo: str, signature: str, category: str, reference: str) -> int:
        """Count a failure signature; returns how often it has been seen in this repo."""
        now = self.clock()
        with self.transaction() as tx:
            tx.execute("INSERT INTO fingerprints (repo, signature, category, first_seen, last_seen, occurrences, "
                       "last_reference) VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (repo, signature) DO UPDATE SET "
                       "occurrences = fingerprints.occurrences + 1, last_seen = excluded.last_seen, "
                       "last_reference = excluded.last_reference", (repo, signature, category, now, now, reference))
            return tx.execute("SELECT occurrences FROM fingerprints WHERE repo = ? AND signature = ?",
                              (repo, signature)).fetchone()[0]


def _runner_job(row) -> RunnerJob:
    return RunnerJob(job_key=row["job_key"], repo=row["repo"], number=row["number"],
                     installation_id=row["installation_id"], device=row["device"], state=row["state"],
                     draft_pr=bool(row["draft_pr"]), requested_by=row["requested_by"],
                     requested_at=row["requested_at"], run_id=row["run_id"])
