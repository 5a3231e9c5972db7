"""What the App does for one issue, shared by the features that act on issues (label triage, comment
commands): the verdict from the issue's text, published alone when there is nothing to run, and a
triage run sent to a runner, announced by the pending comment first.

`observe_issue` reads what is known about the issue (the store, the text's verdict); the `plan_*`
functions are pure and return the steps to carry out (bot/app/plan.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from bot.app.context import JobContext, Rules
from bot.app.dispatch import DispatchRun, newest_repro, plan_dispatch
from bot.app.event import Issue
from bot.app.features.runner_report import stored_report
from bot.app.plan import Step, UpsertComment
from bot.app.publish import comment_for, with_category_override
from bot.app.repo_config import RepoConfig
from bot.app.store import RunnerJob
from bot.core.extract import request_from_text
from bot.core.records import Classification, TriageRequest
from bot.core.render import render
from bot.core.report import TriageReport
from bot.pipeline.comment import COMMENT_MARKER, render_pending_comment

NO_REPRO_NOTE = "no_repro.md.j2"


@dataclass(frozen=True)
class IssueState:
    """What is known about an issue when a feature decides what to do for it."""

    repo: str
    issue: Issue
    config: RepoConfig
    rules: Rules
    classification: Classification  # the verdict from the issue's text, before any override
    overrides: Mapping[str, str] = field(default_factory=dict)
    comment_id: int | None = None  # the bot's report comment, when the store knows it
    latest_report: TriageReport | None = None
    runner_jobs: tuple[RunnerJob, ...] = ()  # newest first
    job_key: str = ""  # the runner job this App job dispatches (the same one on a retry)
    installation_id: int | None = None
    default_branch: str = "main"


def observe_issue(ctx: JobContext, issue: Issue, config: RepoConfig, default_branch: str) -> IssueState:
    store, repo = ctx.store, ctx.repo
    stored = store.latest_report(repo, issue.number)
    return IssueState(repo=repo, issue=issue, config=config, rules=ctx.rules,
                      classification=ctx.services.classifier.classify_text(issue.text),
                      overrides=store.overrides(repo, issue.number), comment_id=store.comment_id(repo, issue.number),
                      latest_report=stored_report(stored),
                      runner_jobs=tuple(store.runner_jobs_for(repo, issue.number)),
                      job_key=store.progress("job_key") or ctx.job.id, installation_id=ctx.job.installation_id,
                      default_branch=default_branch)


def triage_request(issue: Issue) -> TriageRequest:
    return request_from_text(issue.text, source="issue", reference=issue.html_url)


def text_report(state: IssueState, classification: Classification, request: TriageRequest) -> TriageReport:
    """The report the text alone makes (no runner yet)."""
    issue = state.issue
    return TriageReport(classification=classification, source="issue", reference=issue.html_url,
                        reporter_environment=request.environment, issue_number=issue.number, title=issue.title,
                        repro_source=next(iter(request.repro_scripts), None))


def plan_verdict(state: IssueState, overrides: Mapping[str, str] | None = None, note: str | None = None) -> Step:
    """The report comment from the text alone (`classify`, or an issue without a repro), with the
    maintainers' category override when there is one."""
    overrides = state.overrides if overrides is None else overrides
    report = with_category_override(text_report(state, state.classification, triage_request(state.issue)),
                                    overrides.get("category"))
    body = comment_for(report, state.rules.ruleset, state.rules.registry)
    if note:
        body = body.rstrip("\n") + "\n\n" + render(note, bot_name=state.rules.bot_name)
    return UpsertComment(state.repo, state.issue.number, body, COMMENT_MARKER, state.comment_id, stage="verdict")


def plan_start(state: IssueState, requested_device: str | None, requested_by: str | None,
               newest: bool = False) -> tuple[Step, ...]:
    """Verdict from the text now, the repro to a runner (the report is published when it is back).
    `newest`: send the repro the issue shows last instead of the likeliest one."""
    request = triage_request(state.issue)
    ruleset = state.rules.ruleset
    classification = state.classification
    if state.overrides.get("category") in ruleset.categories:
        report = text_report(state, classification, request)
        classification = with_category_override(report, state.overrides["category"]).classification
    plan = plan_dispatch(state.issue.number, request, classification, state.config, state.rules.runner_workflow,
                         state.default_branch, requested_device, job_key=state.job_key,
                         gpu_categories=frozenset(ruleset.with_fact("needs_gpu")),
                         repro=newest_repro(request) if newest else None)
    if plan is None:
        return (plan_verdict(state, note=NO_REPRO_NOTE),)
    body = render_pending_comment(classification, ruleset, plan.device, state.rules.registry)
    if plan.note:
        body += "\n" + plan.note + "\n"
    return (UpsertComment(state.repo, state.issue.number, body, COMMENT_MARKER, state.comment_id,
                          stage="pending_comment", progress=(("job_key", plan.job_key),)),
            DispatchRun(state.repo, state.issue.number, plan, state.installation_id, state.config.draft_pr,
                        requested_by))
