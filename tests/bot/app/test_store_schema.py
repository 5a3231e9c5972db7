"""The store's SQLite file as another process sees it: migrations and the index the claim walks.

Everything else about the store is tested through its public API (test_store.py); these tests open
the file with a connection of their own, because what they check is the file itself.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing

from bot.app.store import MIGRATIONS, Store


def test_a_version_1_database_is_migrated_to_the_claim_index(tmp_path):
    path = str(tmp_path / "old.sqlite3")
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        old.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        for statement in MIGRATIONS[0]:
            old.execute(statement)
        old.execute("INSERT INTO schema_migrations VALUES (1, 0)")
    store = Store(path)
    assert store.schema_version() == len(MIGRATIONS)
    with closing(sqlite3.connect(path)) as database:
        indexes = {row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        plan = " ".join(row[3] for row in database.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE state = 'queued' AND not_before <= 0 ORDER BY created_at LIMIT 1"))
    assert "jobs_by_state_age" in indexes and "jobs_ready" not in indexes
    assert "jobs_by_state_age" in plan and "TEMP B-TREE" not in plan


def test_migrating_twice_changes_nothing(tmp_path):
    path = str(tmp_path / "app.sqlite3")
    Store(path)
    again = Store(path)
    assert again.migrate() == again.schema_version() == len(MIGRATIONS)


def test_jobs_queued_under_the_old_kinds_are_renamed_to_their_events(tmp_path):
    path = str(tmp_path / "v3.sqlite3")
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        old.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        for version, statements in enumerate(MIGRATIONS[:3], start=1):
            for statement in statements:
                old.execute(statement)
            old.execute("INSERT INTO schema_migrations VALUES (?, 0)", (version,))
        for job_id, kind in (("a", "issue_labeled"), ("b", "issue_text"), ("c", "comment_command"), ("d", "workflow_run")):
            old.execute("INSERT INTO jobs (id, kind, repo, payload, state, not_before, created_at, updated_at) "
                        "VALUES (?, ?, 'o/r', '{}', 'queued', 0, 0, 0)", (job_id, kind))
    store = Store(path)
    assert [store.job(job_id).kind for job_id in "abcd"] == ["issues", "issues", "issue_comment", "workflow_run"]
