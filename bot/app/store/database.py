"""The store's plumbing: one SQLite connection per thread, one-statement writes, transactions, migrations.

Only the PRAGMAs here and the `?` placeholders are SQLite-specific; the SQL elsewhere in this
package is portable so PostgreSQL can follow.
"""
from __future__ import annotations

import logging
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from bot.app.store.schema import MIGRATIONS

log = logging.getLogger("pt2_triage.store")


@dataclass
class Database:
    """Thread-safe: each thread gets its own connection (SQLite in WAL mode, so readers never block)."""

    path: str
    clock: Callable[[], float] = time.time
    busy_timeout_s: float = 30.0  # workers may wait; the intake thread sets a short one for itself
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self):
        self.migrate()

    def _connect(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                         check_same_thread=False)
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            if self.path != ":memory:":
                connection.execute("PRAGMA journal_mode = WAL")
                # NORMAL in WAL mode: a commit is written to the WAL before it returns (it survives the
                # process dying) but not fsynced (an OS crash or power cut may undo the last commits).
                # Worker progress may be redone; acknowledged deliveries may not: see tune_connection.
                connection.execute("PRAGMA synchronous = NORMAL")
            self._local.connection = connection
        return connection

    def tune_connection(self, busy_timeout_s: float, durable: bool) -> None:
        """Settings for the calling thread's connection only. `durable`: fsync the WAL at every
        commit (synchronous=FULL), so a commit survives a power cut too; the intake thread uses it
        for deliveries it acknowledges, one fsync per batch."""
        connection = self._connect()
        connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        connection.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")

    def _write(self, sql: str, params: Sequence = ()) -> int:
        """One statement as its own transaction; returns the rows it changed. The write lock is
        taken and released inside that one call (no GIL handoffs while holding it)."""
        return self._connect().execute(sql, params).rowcount

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
