"""Failed CI runs: fetch the failed jobs' logs, find the PT2 failures, comment on the PR(s).

The I/O half of failed-CI watching, shared by the App's CI watch (bot/app/features/ci_watch.py) and
`pt2-triage ci-failure`. What a log means is decided in bot/pipeline/ci_failure.py (pure), and which
comments to write with what text in `plan_ci_comments` (pure).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping

from bot.app.github import Comment, GitHub, WorkflowRun
from bot.core.classify import Classifier
from bot.pipeline.ci_failure import (CI_MARKER, CI_STATE_OPEN, FAILED_CONCLUSIONS, CiFailureReport, JobFinding,
                                     JobLog, analyze_run, merge_earlier_runs, render_ci_comment)

if TYPE_CHECKING:
    from bot.app.context import JobStore

log = logging.getLogger("pt2_triage.ci_watch")

MAX_JOBS_ANALYZED = 20  # a run with 200 failed shards is one breakage; 20 logs are plenty to name it
MAX_COMMENT_CHARS = 65_536  # GitHub refuses a longer comment body (422), and the comment is lost
CUT_NOTE = "\n\n_(comment cut to GitHub's size limit; the jobs' logs have the rest)_\n"


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
    """Download the logs of the run's failed jobs (latest attempt) and analyze them.

    One log at a time: each is analyzed as it arrives and dropped before the next download, so a
    run of twenty failed jobs with 64 MB logs holds one log, not 1.3 GB of them."""
    failed = [job for job in gh.run_jobs(repo, run.id) if job.conclusion in FAILED_CONCLUSIONS]
    if len(failed) > MAX_JOBS_ANALYZED:
        log.info("run %s of %s: %d failed jobs, analyzing the first %d", run.id, repo, len(failed), MAX_JOBS_ANALYZED)
    pull_requests = run.pull_requests or tuple(gh.pulls_for_commit(repo, run.head_sha))
    return analyze_run(repo, run.id, run.html_url, run.name or run.workflow_file, run.head_sha, pull_requests,
                       (downloaded(gh, repo, job) for job in failed[:MAX_JOBS_ANALYZED]), classifier)


def downloaded(gh: GitHub, repo: str, job) -> JobLog:
    download = gh.job_log(repo, job.id)
    return JobLog(job.id, job.name, job.html_url, download.content, job.failed_steps, download.dropped_bytes)


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
            body = fitted_ci_comment(merge_earlier_runs(report, found.body if found else None), bot_name)
            known_id = found.id if found else known.get(f"pr:{key}")
        else:
            body, known_id = fitted_ci_comment(report, bot_name), known.get(f"commit:{key}")
        planned.append(CiComment(report.repo, target, key, body, known_id))
    return tuple(planned)


def shortened(report: CiFailureReport, excerpt_chars: int, earlier_runs: int, detailed: int) -> CiFailureReport:
    """The report with less to show: each log excerpt cut to its last `excerpt_chars`, the earlier runs
    to the newest `earlier_runs`, and the PT2 jobs after the first `detailed` down to their table row
    (their excerpt, distinct failures and repro command dropped; the state keeps each job's first test)."""
    findings, shown = [], 0
    for finding in report.findings:
        if finding.is_pt2:
            shown += 1
            finding = _shown_briefly(finding, excerpt_chars if shown <= detailed else 0, shown <= detailed)
        findings.append(finding)
    return replace(report, findings=tuple(findings), earlier_runs=report.earlier_runs[:earlier_runs])


def _shown_briefly(finding: JobFinding, excerpt_chars: int, detailed: bool) -> JobFinding:
    excerpt = finding.excerpt[-excerpt_chars:] if excerpt_chars else ""
    if detailed:
        return replace(finding, excerpt=excerpt, failures=finding.failures[:5], failing_tests=finding.failing_tests[:6])
    return replace(finding, excerpt=excerpt, failures=(), failing_tests=finding.failing_tests[:1], repro_command=None)


# Tried in order until the comment fits: the whole report first, then less of each run's logs,
# fewer earlier runs, and fewer jobs in detail (a run whose 20 shards all fail with one compiler
# error is one breakage: its first jobs show it).
SHRINK_STEPS: tuple[Callable[[CiFailureReport], CiFailureReport], ...] = (
    lambda report: report,
    lambda report: shortened(report, 2_000, 5, 5),
    lambda report: shortened(report, 1_000, 2, 3),
    lambda report: shortened(report, 0, 0, 1),
)


def fitted_ci_comment(report: CiFailureReport, bot_name: str = "pt2-triage",
                      max_chars: int = MAX_COMMENT_CHARS) -> str:
    """`render_ci_comment` within GitHub's comment limit: a run with many failed PT2 jobs, each with
    its excerpt, and ten earlier runs is longer than GitHub takes, and then no comment is posted at
    all. Shortened step by step (SHRINK_STEPS), and as a last resort cut, its hidden state kept."""
    for shrink in SHRINK_STEPS:
        body = render_ci_comment(shrink(report), bot_name)
        if len(body) <= max_chars:
            return body
    start = body.rfind(CI_STATE_OPEN)
    visible, state = (body[:start], body[start:]) if start >= 0 else (body, "")
    return visible[: max(max_chars - len(CUT_NOTE) - len(state), 0)] + CUT_NOTE + state


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
