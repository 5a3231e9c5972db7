"""Failed CI runs: fetch the failed jobs' logs, find the PT2 failures, comment on the PR(s).

The I/O half of failed-CI watching, shared by the App's CI watch (bot/app/features/ci_watch.py) and
`pt2-triage ci-failure`. What a log means is decided in bot/pipeline/ci_failure.py (pure), and which
comments to write with what text in `plan_ci_comments` (pure).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from bot.app.github import Comment, GitHub, WorkflowRun
from bot.core.classify import Classifier
from bot.pipeline.ci_failure import (CI_MARKER, FAILED_CONCLUSIONS, CiFailureReport, JobLog, analyze_run,
                                     merge_earlier_runs, render_ci_comment)

if TYPE_CHECKING:
    from bot.app.context import JobStore

log = logging.getLogger("pt2_triage.ci_watch")

MAX_JOBS_ANALYZED = 20  # a run with 200 failed shards is one breakage; 20 logs are plenty to name it


@dataclass(frozen=True)
class CiCommentResult:
    target: str  # "pr" | "commit"
    number_or_sha: str
    comment: Comment


@dataclass(frozen=True)
class CiComment:
    """One CI comment to write, updated in place: on a pull request ("pr", its number) or, when the
    run has none, on the commit ("commit", its sha)."""

    repo: str
    target: str
    key: str
    body: str
    known_id: int | None = None

    @property
    def stage(self) -> str:
        return f"ci_comment:{self.target}:{self.key}"

    def post(self, gh: GitHub) -> Comment:
        if self.target == "pr":
            return gh.upsert_comment(self.repo, int(self.key), self.body, CI_MARKER, known_id=self.known_id)
        return gh.upsert_commit_comment(self.repo, self.key, self.body, CI_MARKER, known_id=self.known_id)

    def run(self, gh: GitHub, store: "JobStore") -> None:
        comment = self.post(gh)
        if self.target == "pr":
            store.remember_comment(self.repo, int(self.key), comment.id, "ci")


def collect_failures(gh: GitHub, repo: str, run: WorkflowRun, classifier: Classifier) -> CiFailureReport:
    """Download the logs of the run's failed jobs (latest attempt) and analyze them."""
    failed = [job for job in gh.run_jobs(repo, run.id) if job.conclusion in FAILED_CONCLUSIONS]
    if len(failed) > MAX_JOBS_ANALYZED:
        log.info("run %s of %s: %d failed jobs, analyzing the first %d", run.id, repo, len(failed), MAX_JOBS_ANALYZED)
    logs = []
    for job in failed[:MAX_JOBS_ANALYZED]:
        download = gh.job_log(repo, job.id)
        logs.append(JobLog(job.id, job.name, job.html_url, download.content, job.failed_steps, download.dropped_bytes))
    pull_requests = run.pull_requests or tuple(gh.pulls_for_commit(repo, run.head_sha))
    return analyze_run(repo, run.id, run.html_url, run.name or run.workflow_file, run.head_sha, pull_requests,
                       logs, classifier)


def comment_targets(report: CiFailureReport) -> list[tuple[str, str]]:
    """Where the report goes: each of the run's pull requests, else its commit."""
    return [("pr", str(n)) for n in report.pull_requests] or [("commit", report.head_sha)]


def plan_ci_comments(report: CiFailureReport, previous: Mapping[int, Comment | None], known: Mapping[str, int],
                     bot_name: str = "pt2-triage") -> tuple[CiComment, ...]:
    """One comment per PR (or on the commit when no PR is open), updated as more runs fail; none
    when no failed job is a compiler failure: the bot stays quiet on ordinary test failures.

    `previous`: the bot's CI comment found on each PR (its earlier runs are carried forward);
    `known` maps a target ("pr:12", "commit:<sha>") to a comment id the caller remembers."""
    if not report.pt2_findings:
        return ()
    planned = []
    for target, key in comment_targets(report):
        if target == "pr":
            found = previous.get(int(key))
            body = render_ci_comment(merge_earlier_runs(report, found.body if found else None), bot_name)
            known_id = found.id if found else known.get(f"pr:{key}")
        else:
            body, known_id = render_ci_comment(report, bot_name), known.get(f"commit:{key}")
        planned.append(CiComment(report.repo, target, key, body, known_id))
    return tuple(planned)


def previous_comments(gh: GitHub, report: CiFailureReport) -> dict[int, Comment | None]:
    """The bot's CI comment on each of the run's PRs (read only when there is something to say)."""
    if not report.pt2_findings:
        return {}
    return {number: gh.find_marked_comment(report.repo, number, CI_MARKER) for number in report.pull_requests}


def publish_failures(gh: GitHub, report: CiFailureReport, bot_name: str = "pt2-triage",
                     known_comments: dict[str, int] | None = None) -> list[CiCommentResult]:
    """`plan_ci_comments`, written: the comments posted or updated (none when nothing is PT2)."""
    planned = plan_ci_comments(report, previous_comments(gh, report), known_comments or {}, bot_name)
    return [CiCommentResult(comment.target, comment.key, comment.post(gh)) for comment in planned]
