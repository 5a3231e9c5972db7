"""The store's schema: numbered migrations, applied in order, each in its own transaction.

Portable SQL (SQLite and PostgreSQL alike): text primary keys made in Python, times as REAL epoch
seconds, no AUTOINCREMENT/SERIAL. A new migration is appended, never edited in place.
"""
from __future__ import annotations

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
    # 2: claiming takes the oldest ready job in one statement that walks this index in order; with
    # jobs_ready there, SQLite preferred it and sorted every ready job on each claim
    (
        "CREATE INDEX jobs_by_state_age ON jobs (state, created_at)",
        "DROP INDEX jobs_ready",
    ),
    # 3: each delivered body's hash, so a captured signed body sent again under a new delivery id
    # makes no second job (GitHub's own redeliveries keep their delivery id)
    (
        """CREATE TABLE delivery_bodies (
            event TEXT NOT NULL,
            body_sha256 TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            received_at REAL NOT NULL,
            PRIMARY KEY (event, body_sha256)
        )""",
    ),
    # 4: a job's kind is its event's name (the features routed to the event decide what it needs);
    # jobs queued under the kinds the App used before are renamed to their events
    (
        "UPDATE jobs SET kind = 'issues' WHERE kind IN ('issue_labeled', 'issue_text')",
        "UPDATE jobs SET kind = 'issue_comment' WHERE kind = 'comment_command'",
    ),
)
