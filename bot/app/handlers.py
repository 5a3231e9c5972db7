"""What the App does for each job kind: parse the payload, decide (pure helpers), act (bot.app.github).

Each handler is resumable: it records a checkpoint after every step that writes to GitHub, and
skips the steps its job's progress says are done. A worker that dies part-way leaves the job
leased; when the lease runs out another worker resumes it, so nothing is posted twice or lost.
"""
from __future__ import annotations

import io
import json
import logging
import time
import zipfile
from dataclasses import dataclass, field
from typing import Callable

from bot.app.ci_watch import collect_failures, publish_failures
from bot.core.classify import Classifier
from bot.app.commands import Command, Rejection, authorize, parse_command
from bot.core.commands_table import help_rows
from bot.pipeline.comment import COMMENT_MARKER, fix_verified, render_pending_comment
from bot.app.dispatch import dispatch, job_key_from_run, plan_dispatch
from bot.core.extract import request_from_text
from bot.app.github import GitHub, WorkflowRun
from bot.core.graph_breaks import GraphBreakRegistry
from bot.app.publish import comment_for, publish_report, with_category_override
from bot.core.records import TriageRequest
from bot.core.render import render
from bot.app.repo_config import CONFIG_PATH, ConfigResult, RepoConfig, parse_repo_config
from bot.core.report import TriageReport
from bot.core.ruleset import Ruleset
from bot.app.settings import Settings
from bot.app.store import Job, Store

log = logging.getLogger("pt2_triage.handlers")

CONFIG_TTL_S = 60
SUGGEST_MIN_CONFIDENCE = 0.7
MAX_REPORT_BYTES = 16 << 20
REPORT_ARTIFACT_PREFIX = "pt2-triage"
NO_REPRO_NOTE = "no_repro.md.j2"


@dataclass
class Services:
    """What every handler may use; built once per process by the app factory."""

    settings: Settings
    store: Store
    github_for: Callable[[int | None], GitHub]  # installation id -> client
    classifier: Classifier
    registry: GraphBreakRegistry | None
    clock: Callable[[], float] = time.time
    lease_s: float = 120.0
    _configs: dict[str, tuple[float, ConfigResult, str | None]] = field(default_factory=dict)

    @property
    def ruleset(self) -> Ruleset:
        return self.classifier.ruleset


@dataclass
class Context:
    """One job being handled."""

    services: Services
    job: Job
    gh: GitHub

    @property
    def repo(self) -> str:
        return self.job.repo

    @property
    def store(self) -> Store:
        return self.services.store

    def done(self, stage: str) -> bool:
        return stage in self.job.progress.get("stages", [])

    def checkpoint(self, stage: str, **progress) -> None:
        stages = self.job.progress.get("stages", []) + [stage]
        self.store.checkpoint(self.job, stage, self.services.lease_s, stages=stages, **progress)

    def config(self, number: int | None) -> RepoConfig:
        """The repo's `.github/pt2-triage.yml`, cached for a minute; problems are posted once per
        version of the file, on the issue that met them."""
        cached = self.services._configs.get(self.repo)
        now = self.services.clock()
        if cached is None or now - cached[0] > CONFIG_TTL_S:
            found = self.gh.file_text(self.repo, CONFIG_PATH)
            result = parse_repo_config(found[0] if found else None, set(self.services.ruleset.categories))
            cached = (now, result, found[1] if found else None)
            self.services._configs[self.repo] = cached
        _, result, sha = cached
        if result.problems and number and self.store.claim_notice(self.repo, number, f"config:{sha}"):
            try:
                self.gh.post_comment(self.repo, number, render("config_error.md.j2", problems=result.problems,
                                                               path=CONFIG_PATH))
            except Exception:
                self.store.release_notice(self.repo, number, f"config:{sha}")
                raise
        return result.config


# ---------------------------------------------------------------- issues

def issue_text(issue: dict) -> str:
    """Title and body as the classifier reads a report (and as the real-issue corpus stores one)."""
    return f"# {issue.get('title') or ''}\n\n{issue.get('body') or ''}"


def triage_request(issue: dict) -> TriageRequest:
    return request_from_text(issue_text(issue), source="issue", reference=issue.get("html_url"))


def handle_issue_labeled(ctx: Context) -> None:
    payload = ctx.job.payload
    issue, label = payload["issue"], payload["label"]["name"]
    config = ctx.config(issue["number"])
    if label.lower() != config.label.lower():
        return
    start_triage(ctx, issue, config, requested_device=None, requested_by=(payload.get("sender") or {}).get("login"))


def start_triage(ctx: Context, issue: dict, config: RepoConfig, requested_device: str | None,
                 requested_by: str | None, fresh_repro: bool = True) -> None:
    """Verdict from the text now, the repro to a runner, the report published when it is back."""
    number = issue["number"]
    request = triage_request(issue)
    overrides = ctx.store.overrides(ctx.repo, number)
    classification = ctx.services.classifier.classify_text(issue_text(issue))
    if overrides.get("category") in ctx.services.ruleset.categories:
        classification = with_category_override(_text_report(classification, issue, request), overrides["category"]).classification
    default_branch = (ctx.job.payload.get("repository") or {}).get("default_branch") or "main"
    plan = plan_dispatch(number, request, classification, config, ctx.services.settings.runner_workflow,
                         default_branch, requested_device, job_key=ctx.job.progress.get("job_key"))
    if plan is None:
        publish_verdict(ctx, issue, classification, request, note=NO_REPRO_NOTE)
        return
    if not ctx.done("pending_comment"):
        body = render_pending_comment(classification, ctx.services.ruleset, plan.device, ctx.services.registry)
        if plan.note:
            body += "\n" + plan.note + "\n"
        comment = ctx.gh.upsert_comment(ctx.repo, number, body, COMMENT_MARKER,
                                        known_id=ctx.store.comment_id(ctx.repo, number))
        ctx.store.remember_comment(ctx.repo, number, comment.id)
        ctx.checkpoint("pending_comment", comment_id=comment.id, job_key=plan.job_key)
    if not ctx.done("dispatched"):
        ctx.store.add_runner_job(plan.job_key, ctx.repo, number, ctx.job.installation_id, plan.device,
                                 config.draft_pr, requested_by)
        dispatch(ctx.gh, ctx.repo, plan)
        ctx.checkpoint("dispatched")
        log.info("%s#%s: dispatched %s on %s (job %s)", ctx.repo, number, plan.workflow, plan.device, plan.job_key)


def _text_report(classification, issue: dict, request: TriageRequest) -> TriageReport:
    return TriageReport(classification=classification, source="issue", reference=issue.get("html_url"),
                        reporter_environment=request.environment, issue_number=issue["number"],
                        title=issue.get("title"), repro_source=next(iter(request.repro_scripts), None))


def publish_verdict(ctx: Context, issue: dict, classification, request: TriageRequest, note: str | None = None) -> None:
    """The comment from the text alone (no runner): `classify`, or an issue without a repro."""
    number = issue["number"]
    overrides = ctx.store.overrides(ctx.repo, number)
    report = with_category_override(_text_report(classification, issue, request), overrides.get("category"))
    body = comment_for(report, ctx.services.ruleset, ctx.services.registry)
    if note:
        body = body.rstrip("\n") + "\n\n" + render(note, bot_name=ctx.services.settings.bot_name)
    comment = ctx.gh.upsert_comment(ctx.repo, number, body, COMMENT_MARKER, known_id=ctx.store.comment_id(ctx.repo, number))
    ctx.store.remember_comment(ctx.repo, number, comment.id)


def handle_issue_text(ctx: Context) -> None:
    """A new or edited issue that shows a PT2 error but has no triage label: suggest once."""
    issue = ctx.job.payload["issue"]
    number = issue["number"]
    config = ctx.config(number)
    labels = {(label.get("name") or "").lower() for label in issue.get("labels") or ()}
    if config.auto_suggest == "off" or config.label.lower() in labels:
        return
    classification = ctx.services.classifier.classify_text(issue_text(issue))
    if (classification.category in ("not_pt2", "unknown") or classification.unsure
            or classification.confidence < SUGGEST_MIN_CONFIDENCE):
        return
    if not ctx.store.claim_notice(ctx.repo, number, "suggestion"):
        return
    try:
        if config.auto_suggest == "label":
            ctx.gh.add_labels(ctx.repo, number, [config.label])
        else:
            category = ctx.services.ruleset.categories[classification.category]
            ctx.gh.post_comment(ctx.repo, number, render("suggestion.md.j2", category=category, label=config.label,
                                                         bot_name=ctx.services.settings.bot_name,
                                                         confidence=classification.confidence))
    except Exception:
        ctx.store.release_notice(ctx.repo, number, "suggestion")
        raise


# ---------------------------------------------------------------- comment commands

def handle_comment_command(ctx: Context) -> None:
    payload = ctx.job.payload
    comment, issue = payload["comment"], payload["issue"]
    login = (comment.get("user") or {}).get("login") or ""
    settings = ctx.services.settings
    parsed = parse_command(comment.get("body") or "", settings.bot_name,
                           categories=set(ctx.services.ruleset.categories))
    if parsed is None:
        return
    number = issue["number"]
    if isinstance(parsed, Rejection):
        reply_once(ctx, number, "command_rejected.md.j2", login=login, message=parsed.message)
        return
    config = ctx.config(number)
    permission = ctx.gh.permission(ctx.repo, login) if parsed.spec.needs_write else "read"
    decision = authorize(parsed, login, permission, config)
    if not decision.allowed:
        reply_once(ctx, number, "command_refused.md.j2", login=login, reason=decision.reason)
        return
    if not ctx.done("reacted"):
        ctx.gh.react(ctx.repo, comment["id"], "eyes")
        ctx.checkpoint("reacted")
    COMMAND_ACTIONS[parsed.name](ctx, parsed, issue, config, login)


def reply_once(ctx: Context, number: int, template: str, **values) -> None:
    if ctx.done("replied"):
        return
    commands = help_rows()
    ctx.gh.post_comment(ctx.repo, number, render(template, commands=commands, bot_name=ctx.services.settings.bot_name,
                                                 **values))
    ctx.checkpoint("replied")


def run_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    start_triage(ctx, issue, config, requested_device=command.argument, requested_by=login)


def rerun_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    previous = ctx.store.runner_jobs_for(ctx.repo, issue["number"])
    start_triage(ctx, issue, config, requested_device=previous[0].device if previous else None, requested_by=login)


def classify_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    request = triage_request(issue)
    publish_verdict(ctx, issue, ctx.services.classifier.classify_text(issue_text(issue)), request)


def category_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    ctx.store.set_override(ctx.repo, issue["number"], "category", command.argument, login)
    republish(ctx, issue, config, draft_pr=False)


def test_file_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    ctx.store.set_override(ctx.repo, issue["number"], "test-file", command.argument, login)
    has_pr = any(job.draft_pr for job in ctx.store.runner_jobs_for(ctx.repo, issue["number"]))
    republish(ctx, issue, config, draft_pr=config.draft_pr and has_pr)


def draft_pr_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    if ctx.store.latest_report(ctx.repo, issue["number"]) is None:
        reply_once(ctx, issue["number"], "command_rejected.md.j2", login=login,
                   message="there is no report yet to take a test from: run the triage first")
        return
    republish(ctx, issue, config, draft_pr=True)


def help_command(ctx: Context, command: Command, issue: dict, config: RepoConfig, login: str) -> None:
    reply_once(ctx, issue["number"], "help.md.j2", login=login)


def republish(ctx: Context, issue: dict, config: RepoConfig, draft_pr: bool) -> None:
    """Publish the latest report again with the current overrides; the verdict from text if none."""
    number = issue["number"]
    stored = ctx.store.latest_report(ctx.repo, number)
    if stored is None:
        request = triage_request(issue)
        publish_verdict(ctx, issue, ctx.services.classifier.classify_text(issue_text(issue)), request)
        category = ctx.store.overrides(ctx.repo, number).get("category")
        if category:
            ctx.gh.add_labels(ctx.repo, number, list(ctx.services.ruleset.categories[category].labels))
        return
    publish_stored(ctx, number, TriageReport.from_dict(json.loads(stored)), config, draft_pr)


def publish_stored(ctx: Context, number: int, report: TriageReport, config: RepoConfig, draft_pr: bool,
                   fixed: bool = False):
    overrides = ctx.store.overrides(ctx.repo, number)
    category = overrides.get("category") or report.classification.category
    result = publish_report(ctx.gh, ctx.repo, number, report, ctx.services.ruleset, ctx.services.registry,
                            draft_pr=draft_pr, known_comment_id=ctx.store.comment_id(ctx.repo, number),
                            category_override=overrides.get("category"),
                            test_file=overrides.get("test-file") or config.test_files.get(category), fixed=fixed)
    ctx.store.remember_comment(ctx.repo, number, result.comment.id)
    return result


COMMAND_ACTIONS = {
    "run": run_command, "rerun": rerun_command, "minimize": rerun_command, "classify": classify_command,
    "category": category_command, "test-file": test_file_command, "draft-pr": draft_pr_command, "help": help_command,
}


# ---------------------------------------------------------------- workflow runs

def handle_workflow_run(ctx: Context) -> None:
    run = WorkflowRun.from_api(ctx.job.payload["workflow_run"])
    config = ctx.config(None)
    runner_workflow = config.runner_workflow or ctx.services.settings.runner_workflow
    if run.workflow_file == runner_workflow:
        handle_runner_completed(ctx, run, config)
    elif run.conclusion == "failure" and config.watches(run.name, run.workflow_file):
        handle_ci_failure(ctx, run)


def handle_ci_failure(ctx: Context, run: WorkflowRun) -> None:
    report = collect_failures(ctx.gh, ctx.repo, run, ctx.services.classifier)
    known = {f"pr:{n}": cid for n in report.pull_requests if (cid := ctx.store.comment_id(ctx.repo, n, "ci"))}
    for result in publish_failures(ctx.gh, report, ctx.services.settings.bot_name, known):
        if result.target == "pr":
            ctx.store.remember_comment(ctx.repo, int(result.number_or_sha), result.comment.id, "ci")
    for finding in report.pt2_findings:
        ctx.store.record_fingerprint(ctx.repo, finding.signature, finding.category, finding.job_url)


def handle_runner_completed(ctx: Context, run: WorkflowRun, config: RepoConfig) -> None:
    """A triage run finished: find its report artifact and publish it to the issue it was for."""
    artifacts = [a for a in ctx.gh.run_artifacts(ctx.repo, run.id) if not a.expired]
    pending = {job.job_key for job in ctx.store.pending_runner_jobs(ctx.repo)}
    job_key = job_key_from_run(run.display_title, [a.name for a in artifacts], pending)
    report = None
    for artifact in sorted(artifacts, key=lambda a: (job_key or "") not in a.name):
        if artifact.name.startswith(REPORT_ARTIFACT_PREFIX) or job_key and job_key in artifact.name:
            report = report_from_zip(ctx.gh.artifact_zip(ctx.repo, artifact.id))
            if report is not None:
                break
    runner_job = ctx.store.runner_job(job_key) if job_key else None
    number = runner_job.number if runner_job else (report.issue_number if report else None)
    if number is None:
        log.warning("%s: runner run %s matches no dispatched job and has no report; ignored", ctx.repo, run.id)
        return
    if report is None:
        body = render("runner_failed.md.j2", marker=COMMENT_MARKER, run=run, bot_name=ctx.services.settings.bot_name)
        comment = ctx.gh.upsert_comment(ctx.repo, number, body, COMMENT_MARKER,
                                        known_id=ctx.store.comment_id(ctx.repo, number))
        ctx.store.remember_comment(ctx.repo, number, comment.id)
    else:
        draft_pr = config.draft_pr and (runner_job.draft_pr if runner_job else True)
        previous = ctx.store.latest_report(ctx.repo, number)
        fixed = fix_verified(TriageReport.from_dict(json.loads(previous)) if previous else None, report)
        publish_stored(ctx, number, report, config, draft_pr, fixed)
        ctx.store.save_report(ctx.repo, number, report.to_json(), run.id)
        ctx.store.record_fingerprint(ctx.repo, report.classification.signature, report.classification.category,
                                     f"#{number}")
    if job_key:
        ctx.store.complete_runner_job(job_key, run.id, "published" if report else "failed")


def report_from_zip(data: bytes) -> TriageReport | None:
    """report.json from an artifact zip (at its root or in one folder), size-capped, or None."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        return None
    members = sorted((m for m in archive.infolist() if m.filename.rsplit("/", 1)[-1] == "report.json"
                      and m.filename.count("/") <= 1), key=lambda m: m.filename.count("/"))
    for member in members:
        if member.file_size > MAX_REPORT_BYTES:
            continue
        try:
            return TriageReport.from_dict(json.loads(archive.read(member).decode("utf-8")))
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("artifact %s: not a usable report (%s)", member.filename, exc)
    return None


HANDLERS: dict[str, Callable[[Context], None]] = {
    "issue_labeled": handle_issue_labeled,
    "issue_text": handle_issue_text,
    "comment_command": handle_comment_command,
    "workflow_run": handle_workflow_run,
}
