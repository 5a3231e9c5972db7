"""CI watch: a watched workflow's run failed; the failed jobs' logs are read, and when a failure is a
compiler (PT2) failure the run's PRs get one comment each, updated as more runs fail (the commit
gets it when there is no PR). Ordinary test failures get nothing. Failure signatures are counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from bot.app.ci_publish import collect_failures, plan_ci_comments, previous_comments
from bot.app.context import JobContext, JobStore, Rules
from bot.app.event import Event
from bot.app.github import Comment, GitHub, WorkflowRun
from bot.app.plan import Plan, RecordFingerprints, carry_out
from bot.app.repo_config import RepoConfig
from bot.pipeline.ci_failure import CiFailureReport

ROUTES = frozenset({("workflow_run", "completed")})


@dataclass(frozen=True)
class FailedRun:
    repo: str
    run: WorkflowRun


@dataclass(frozen=True)
class CiState:
    config: RepoConfig
    rules: Rules
    report: CiFailureReport | None = None  # read only for a watched run
    previous: Mapping[int, Comment | None] = field(default_factory=dict)  # the bot's CI comment on each PR
    known: Mapping[str, int] = field(default_factory=dict)  # "pr:<n>" -> the CI comment id the store knows


def parse(event: Event) -> FailedRun | None:
    run = event.workflow_run
    if not event.repo or run is None or run.conclusion != "failure":
        return None
    return FailedRun(event.repo, run)


def watched(run: WorkflowRun, config: RepoConfig, rules: Rules) -> bool:
    """A failed run of a workflow the repo watches (the runner workflow's own runs are not CI)."""
    return (run.workflow_file != rules.runner_workflow_for(config) and run.conclusion == "failure"
            and config.watches(run.name, run.workflow_file))


def observe(failed: FailedRun, ctx: JobContext) -> CiState:
    config = ctx.config(None)
    if not watched(failed.run, config, ctx.rules):
        return CiState(config, ctx.rules)
    report = collect_failures(ctx.gh, ctx.repo, failed.run, ctx.services.classifier)
    known = {f"pr:{n}": cid for n in report.pull_requests if (cid := ctx.store.comment_id(ctx.repo, n, "ci"))}
    return CiState(config, ctx.rules, report, previous_comments(ctx.gh, report), known)


def decide(failed: FailedRun, state: CiState) -> Plan:
    if state.report is None or not watched(failed.run, state.config, state.rules):
        return Plan.nothing(f"{failed.run.workflow_file} is not a watched workflow")
    comments = plan_ci_comments(state.report, state.previous, state.known, state.rules.bot_name)
    if not comments:
        return Plan.nothing(f"run {failed.run.id}: no failed job is a PT2 failure")
    fingerprints = tuple((f.signature, f.category, f.job_url) for f in state.report.pt2_findings)
    return Plan((*comments, RecordFingerprints(failed.repo, fingerprints)))


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)
