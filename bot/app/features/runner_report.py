"""Runner report: a run of the runner workflow finished; its report artifact is published to the issue
it was for (the comment updated in place, labels, the draft PR), or the comment says the run failed.

Only a run the App itself dispatched counts: a `workflow_dispatch` run of this repository's own code
whose title is exactly the run-name of a job still waiting (`bot.app.dispatch.run_title`), or a later
attempt of a run that left no report (a maintainer re-ran it from the Actions page). Any other
run of a file with the runner workflow's name (a fork's pull request that edits it runs too) is
logged and ignored. The issue is the job's; the report artifact is untrusted input, size-capped,
validated, and never chooses the issue: a run that matches no waiting job publishes nothing.
"""
from __future__ import annotations

import io
import json
import logging
import lzma
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from bot.app.context import JobContext, JobStore, Rules
from bot.app.dispatch import job_key_from_run
from bot.app.event import Event, payload_object, payload_string
from bot.app.github import Artifact, GitHub, WorkflowRun
from bot.app.plan import Plan, RecordFingerprints, Step, UpsertComment, carry_out
from bot.app.publish import plan_publish
from bot.app.repo_config import RepoConfig
from bot.app.store import RunnerJob
from bot.core.render import render
from bot.core.report import TriageReport, with_known_category
from bot.pipeline.comment import COMMENT_MARKER, fix_verified

log = logging.getLogger("pt2_triage.runner_report")

ROUTES = frozenset({("workflow_run", "completed")})
MAX_REPORT_BYTES = 16 << 20
REPORT_ARTIFACT_PREFIX = "pt2-triage"


# the only event that starts a run the App asked for (a pull request, push or schedule may run a file
# of the same name with code the App never saw)
DISPATCHED_EVENT = "workflow_dispatch"
# what a read of an artifact can raise on hostile bytes: a bad zip, CRC, encryption flag or compression
# method, an undecodable or too deeply nested report.json, a field of the wrong type
UNREADABLE = (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, NotImplementedError, EOFError, OSError,
              zlib.error, lzma.LZMAError, ValueError, TypeError, KeyError)


@dataclass(frozen=True)
class CompletedRun:
    repo: str
    run: WorkflowRun
    head_repository: str | None = None  # whose code ran: a fork's for a fork's pull request


@dataclass(frozen=True)
class RunState:
    config: RepoConfig
    rules: Rules
    job_key: str | None = None  # the dispatched job the run belongs to, still waiting when the run came
    runner_job: RunnerJob | None = None
    report: TriageReport | None = None  # from the run's artifact
    previous_report: TriageReport | None = None  # the last published report
    overrides: Mapping[str, str] = field(default_factory=dict)  # the issue's
    comment_id: int | None = None


def parse(event: Event) -> CompletedRun | None:
    run = event.workflow_run
    if not (event.repo and run):
        return None
    head = payload_object(event.member("workflow_run").get("head_repository"))
    return CompletedRun(event.repo, run, payload_string(head.get("full_name")))


def not_dispatched_by_us(completed: CompletedRun) -> str | None:
    """Why the run cannot be one the App dispatched (None when it can be): it was started by another
    event, or it ran another repository's code. Both are facts of the event, not of what the run wrote."""
    run = completed.run
    if run.event != DISPATCHED_EVENT:
        return f"runner run {run.id} was started by {run.event or 'an unnamed event'!r}, not {DISPATCHED_EVENT}; ignored"
    if (completed.head_repository or "").lower() != completed.repo.lower():
        return f"runner run {run.id} ran code from {completed.head_repository!r}, not {completed.repo}; ignored"
    return None


def observe(completed: CompletedRun, ctx: JobContext) -> RunState:
    """What the run's job is and what it left, read only for a run the App dispatched for a waiting job:
    a stranger's run costs no download."""
    config = ctx.config(None)
    if completed.run.workflow_file != ctx.rules.runner_workflow_for(config) or not_dispatched_by_us(completed):
        return RunState(config, ctx.rules)
    waiting = ctx.store.pending_runner_jobs(ctx.repo)
    failed = ctx.store.failed_runner_job(ctx.repo, completed.run.id)  # this run's earlier attempt failed
    candidates = waiting + ([failed] if failed else [])
    job_key = job_key_from_run(completed.run.display_title, candidates)
    runner_job = next((job for job in candidates if job.job_key == job_key), None)
    if runner_job is None:
        return RunState(config, ctx.rules)
    artifacts = [a for a in ctx.gh.run_artifacts(ctx.repo, completed.run.id) if not a.expired]
    report = first_report(report_artifacts(artifacts, runner_job.job_key),
                          lambda a: ctx.gh.artifact_zip(ctx.repo, a.id), frozenset(ctx.rules.ruleset.categories))
    number = runner_job.number
    return RunState(config, ctx.rules, runner_job.job_key, runner_job, report,
                    stored_report(ctx.store.latest_report(ctx.repo, number)),
                    ctx.store.overrides(ctx.repo, number), ctx.store.comment_id(ctx.repo, number))


def stored_report(text: str | None) -> TriageReport | None:
    """The issue's last published report; one saved before reports were validated may not read now,
    and then there is none to compare with (it only decides whether to celebrate a fix)."""
    if not text:
        return None
    try:
        return TriageReport.from_dict(json.loads(text))
    except UNREADABLE as exc:
        log.warning("the last stored report does not read (%s); comparing with none", exc)
        return None


def decide(completed: CompletedRun, state: RunState) -> Plan:
    run = completed.run
    if run.workflow_file != state.rules.runner_workflow_for(state.config):
        return Plan.nothing(f"{run.workflow_file} is not the runner workflow")
    stranger = not_dispatched_by_us(completed)
    if stranger:
        return Plan.nothing(stranger)
    if state.runner_job is None:
        return Plan.nothing(f"runner run {run.id} titled {run.display_title[:120]!r} is no waiting job's run; ignored")
    number = state.runner_job.number
    if state.runner_job.state == "failed" and state.report is None:
        return Plan.nothing(f"runner run {run.id} was re-run and left no report again; the issue already says so")
    if state.report is None:
        body = render("runner_failed.md.j2", marker=COMMENT_MARKER, run=run, bot_name=state.rules.bot_name)
        steps: tuple[Step, ...] = (UpsertComment(completed.repo, number, body, COMMENT_MARKER, state.comment_id,
                                                 stage="failure_comment"),)
    else:
        steps = published(completed, state, number, state.report)
    steps += (CompleteRunnerJob(state.runner_job.job_key, run.id, "published" if state.report else "failed"),)
    return Plan(steps)


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)


def published(completed: CompletedRun, state: RunState, number: int, report: TriageReport) -> tuple[Step, ...]:
    """The report published (with a draft PR when the repo and the request want one), kept as the
    issue's latest, and its failure signature counted."""
    draft_pr = state.config.draft_pr and bool(state.runner_job and state.runner_job.draft_pr)
    fixed = fix_verified(state.previous_report, report)
    classification = report.classification
    return (plan_publish(completed.repo, number, report, state.rules, state.config, state.overrides,
                         state.comment_id, draft_pr, fixed),
            SaveReport(completed.repo, number, report.to_json(), completed.run.id),
            RecordFingerprints(completed.repo, ((classification.signature, classification.category, f"#{number}"),)))


# ---------------------------------------------------------------- the report artifact

def report_artifacts(artifacts: Iterable[Artifact], job_key: str) -> list[Artifact]:
    """The artifacts of the job's run that may hold the report, the job's own first."""
    ordered = sorted(artifacts, key=lambda a: job_key not in a.name)
    return [a for a in ordered if a.name.startswith(REPORT_ARTIFACT_PREFIX) or job_key in a.name]


def first_report(artifacts: Iterable[Artifact], download: Callable[[Artifact], bytes],
                 categories: frozenset[str] = frozenset()) -> TriageReport | None:
    for artifact in artifacts:
        report = report_from_zip(download(artifact), categories)
        if report is not None:
            return report
    return None


def report_from_zip(data: bytes, categories: frozenset[str] = frozenset()) -> TriageReport | None:
    """report.json from an artifact zip (at its root or in one folder), size-capped and validated, or
    None: whatever is wrong with the bytes, the caller says "no usable report" on the issue. A category
    outside `categories` (a newer runner's) is published as `unknown`, with a note."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = sorted((m for m in archive.infolist() if m.filename.rsplit("/", 1)[-1] == "report.json"
                          and m.filename.count("/") <= 1), key=lambda m: m.filename.count("/"))
    except UNREADABLE as exc:
        log.warning("artifact: not a readable zip (%s: %s)", type(exc).__name__, str(exc)[:200])
        return None
    for member in members:
        if member.file_size > MAX_REPORT_BYTES:
            continue
        try:
            with archive.open(member) as stream:
                text = stream.read(MAX_REPORT_BYTES + 1).decode("utf-8")
            report = TriageReport.from_dict(json.loads(text))
            return with_known_category(report, categories) if categories else report
        except UNREADABLE as exc:
            log.warning("artifact %s: not a usable report (%s: %s)", member.filename[:100], type(exc).__name__,
                        str(exc)[:200])
    return None


# ---------------------------------------------------------------- this feature's own steps

@dataclass(frozen=True)
class SaveReport:
    repo: str
    number: int
    report_json: str
    run_id: int
    stage: str = ""  # an upsert of the latest report: safe to repeat

    def run(self, gh: GitHub, store: JobStore) -> None:
        store.save_report(self.repo, self.number, self.report_json, self.run_id)


@dataclass(frozen=True)
class CompleteRunnerJob:
    job_key: str
    run_id: int
    state: str
    stage: str = ""  # a no-op for a run already recorded

    def run(self, gh: GitHub, store: JobStore) -> None:
        store.complete_runner_job(self.job_key, self.run_id, self.state)
