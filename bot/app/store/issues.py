"""What the bot remembers per issue and repository: its comment ids, maintainers' overrides,
once-only notices, the latest report, dispatched runner jobs and failure fingerprints."""
from __future__ import annotations

from bot.app.store.database import Database
from bot.app.store.records import RunnerJob


class IssueState(Database):
    """Per-issue and per-repository state (part of `Store`)."""


    def comment_id(self, repo: str, number: int, purpose: str = "report") -> int | None:
        row = self._connect().execute("SELECT comment_id FROM comments WHERE repo = ? AND number = ? AND purpose = ?",
                                      (repo, number, purpose)).fetchone()
        return row["comment_id"] if row else None

    def remember_comment(self, repo: str, number: int, comment_id: int, purpose: str = "report") -> None:
        self._write("INSERT INTO comments (repo, number, purpose, comment_id, updated_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (repo, number, purpose) DO UPDATE SET comment_id = excluded.comment_id, "
                    "updated_at = excluded.updated_at", (repo, number, purpose, comment_id, self.clock()))

    def set_override(self, repo: str, number: int, name: str, value: str, set_by: str) -> None:
        self._write("INSERT INTO overrides (repo, number, name, value, set_by, set_at) VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (repo, number, name) DO UPDATE SET value = excluded.value, "
                    "set_by = excluded.set_by, set_at = excluded.set_at",
                    (repo, number, name, value, set_by, self.clock()))

    def overrides(self, repo: str, number: int) -> dict[str, str]:
        rows = self._connect().execute("SELECT name, value FROM overrides WHERE repo = ? AND number = ?",
                                       (repo, number)).fetchall()
        return {row["name"]: row["value"] for row in rows}

    def claim_notice(self, repo: str, number: int, kind: str) -> bool:
        """True the first time only: for things the bot says once per issue (suggestions, config errors)."""
        return bool(self._write("INSERT INTO notices (repo, number, kind, created_at) VALUES (?, ?, ?, ?) "
                                "ON CONFLICT (repo, number, kind) DO NOTHING", (repo, number, kind, self.clock())))

    def release_notice(self, repo: str, number: int, kind: str) -> None:
        """Undo `claim_notice` when saying it failed, so a retry can say it."""
        self._write("DELETE FROM notices WHERE repo = ? AND number = ? AND kind = ?", (repo, number, kind))

    # -- the latest report per issue (for overrides, draft-pr and rerun)

    def save_report(self, repo: str, number: int, report_json: str, run_id: int | None) -> None:
        self._write("INSERT INTO reports (repo, number, report, run_id, updated_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (repo, number) DO UPDATE SET report = excluded.report, run_id = excluded.run_id, "
                    "updated_at = excluded.updated_at", (repo, number, report_json, run_id, self.clock()))

    def latest_report(self, repo: str, number: int) -> str | None:
        row = self._connect().execute("SELECT report FROM reports WHERE repo = ? AND number = ?",
                                      (repo, number)).fetchone()
        return row["report"] if row else None

    # -- runner jobs (dispatched workflow runs)

    def add_runner_job(self, job_key: str, repo: str, number: int, installation_id: int | None, device: str,
                       draft_pr: bool, requested_by: str | None) -> None:
        self._write("INSERT INTO runner_jobs (job_key, repo, number, installation_id, device, state, draft_pr, "
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
        """Mark a runner job done by `run_id`; False when that run was already recorded (redelivery),
        unless it failed then and is published now (a maintainer re-ran the failed run)."""
        return bool(self._write("UPDATE runner_jobs SET state = ?, run_id = ?, completed_at = ? "
                                "WHERE job_key = ? AND (run_id IS NULL OR run_id <> ? OR (state = ? AND ? = ?))",
                                (state, run_id, self.clock(), job_key, run_id, "failed", state, "published")))

    def failed_runner_job(self, repo: str, run_id: int) -> RunnerJob | None:
        """The job whose run `run_id` left no report: a later attempt of that run (re-run from the
        Actions page) may leave one."""
        row = self._connect().execute("SELECT * FROM runner_jobs WHERE repo = ? AND run_id = ? AND state = ?",
                                      (repo, run_id, "failed")).fetchone()
        return _runner_job(row) if row else None

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
