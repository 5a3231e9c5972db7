"""Failed CI runs: fetch the failed jobs' logs, find the PT2 failures, comment on the PR(s).

The I/O half of failed-CI watching, shared by the App's `workflow_run.completed` handler and
`pt2-triage ci-failure`. What a log means is decided in `bot/ci_failure.py` (pure).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.pipeline.ci_failure import (CI_MARKER, FAILED_CONCLUSIONS, CiFailureReport, JobLog, analyze_run, merge_earlier_runs,
                         render_ci_comment)
from bot.core.classify import Classifier
from bot.app.github import Comment, GitHub, WorkflowRun

log = logging.getLogger("pt2_triage.ci_watch")

MAX_JOBS_ANALYZED = 20  # a run with 200 failed shards is one breakage; 20 logs are plenty to name it


@dataclass(frozen=True)
class CiCommentResult:
    target: str  # "pr" | "commit"
    number_or_sha: str
    comment: Comment


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


def publish_failures(gh: GitHub, report: CiFailureReport, bot_name: str = "pt2-triage",
                     known_comments: dict[str, int] | None = None) -> list[CiCommentResult]:
    """One comment per PR (or on the commit when no PR is open), updated as more runs fail.

    Nothing is posted when no failed job is a compiler failure: the bot stays quiet on ordinary
    test failures. `known_comments` maps a target ("pr:12", "commit:<sha>") to a comment id.
    """
    if not report.pt2_findings:
        return []
    known = known_comments or {}
    results = []
    targets = [("pr", str(n)) for n in report.pull_requests] or [("commit", report.head_sha)]
    for kind, key in targets:
        if kind == "pr":
            previous = gh.find_marked_comment(report.repo, int(key), CI_MARKER)
            body = render_ci_comment(merge_earlier_runs(report, previous.body if previous else None), bot_name)
            comment = gh.upsert_comment(report.repo, int(key), body, CI_MARKER,
                                        known_id=previous.id if previous else known.get(f"pr:{key}"))
        else:
            body = render_ci_comment(report, bot_name)
            comment = gh.upsert_commit_comment(report.repo, key, body, CI_MARKER, known_id=known.get(f"commit:{key}"))
        results.append(CiCommentResult(kind, key, comment))
    return results
