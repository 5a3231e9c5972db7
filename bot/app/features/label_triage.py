"""Label triage: the triage label on an issue starts a triage (the verdict from the text now, the
repro to a runner; the report is published when the runner's artifact comes back)."""
from __future__ import annotations

from dataclasses import dataclass

from bot.app.context import JobContext, JobStore
from bot.app.event import Event, Issue, payload_string
from bot.app.github import GitHub
from bot.app.issue_triage import IssueState, observe_issue, plan_start
from bot.app.plan import Plan, carry_out
from bot.app.repo_config import RepoConfig

ROUTES = frozenset({("issues", "labeled")})


@dataclass(frozen=True)
class Labeled:
    repo: str
    issue: Issue
    label: str
    sender: str | None
    default_branch: str


@dataclass(frozen=True)
class LabelState:
    config: RepoConfig
    issue: IssueState | None  # read only when the label is the triage label


def parse(event: Event) -> Labeled | None:
    """A label added to an issue. On GitHub a pull request is also an issue: triage is for issues."""
    issue = Issue.from_payload(event.payload.get("issue"))
    label = payload_string(event.member("label").get("name"))
    if not event.repo or issue is None or issue.is_pull_request or not label:
        return None
    return Labeled(event.repo, issue, label, event.sender, event.default_branch)


def is_triage_label(label: str, config: RepoConfig) -> bool:
    return label.lower() == config.label.lower()


def observe(labeled: Labeled, ctx: JobContext) -> LabelState:
    config = ctx.config(labeled.issue.number)
    if not is_triage_label(labeled.label, config):
        return LabelState(config, None)
    return LabelState(config, observe_issue(ctx, labeled.issue, config, labeled.default_branch))


def decide(labeled: Labeled, state: LabelState) -> Plan:
    if state.issue is None or not is_triage_label(labeled.label, state.config):
        return Plan.nothing(f"label {labeled.label!r} is not the triage label {state.config.label!r}")
    return Plan(plan_start(state.issue, requested_device=None, requested_by=labeled.sender))


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)
