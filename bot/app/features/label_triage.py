"""Label triage: the triage label on an issue starts a triage (the verdict from the text now, the
repro to a runner; the report is published when the runner's artifact comes back).

Anyone may open an issue through a form that applies the label, and a run executes the issue's code on
a runner: so the repro goes to a runner only when whoever applied the label could have applied it as a
member of the repository (triage role or above), or when it is the App itself, applying the label under
the maintainers' `auto_suggest: label`. Otherwise the verdict from the text is posted, with a line
saying how a maintainer starts the run."""
from __future__ import annotations

from dataclasses import dataclass

from bot.app.context import JobContext, JobStore
from bot.app.event import Event, Issue, payload_string
from bot.app.github import GitHub
from bot.app.issue_triage import IssueState, observe_issue, plan_start, plan_verdict
from bot.app.plan import Plan, carry_out
from bot.app.repo_config import RepoConfig

ROUTES = frozenset({("issues", "labeled")})
# The roles that may apply labels (GitHub's triage role and up): a label from them is a member's
# request for a run. `permission()` reads a custom role as the base permission it extends.
LABELING_ROLES = frozenset({"triage", "write", "maintain", "admin"})
NOT_STARTED_NOTE = "label_no_run.md.j2"


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
    sender_role: str = "none"  # the sender's role in the repository (asked only for the triage label)
    sender_is_app: bool = False  # the App applied the label itself (auto_suggest: label)


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
    issue = observe_issue(ctx, labeled.issue, config, labeled.default_branch)
    if not labeled.sender:
        return LabelState(config, issue)
    if ctx.gh.bot_login and labeled.sender.lower() == ctx.gh.bot_login.lower():
        return LabelState(config, issue, sender_is_app=True)
    return LabelState(config, issue, sender_role=ctx.gh.permission(labeled.repo, labeled.sender))


def may_start_run(state: LabelState) -> bool:
    """The label is a request for a run: a member who may label applied it, or the App did so because
    the maintainers' config says `auto_suggest: label` (their opt-in to running strangers' repros, in
    the sandbox, with no human step)."""
    if state.sender_is_app:
        return state.config.auto_suggest == "label"
    return state.sender_role in LABELING_ROLES


def decide(labeled: Labeled, state: LabelState) -> Plan:
    if state.issue is None or not is_triage_label(labeled.label, state.config):
        return Plan.nothing(f"label {labeled.label!r} is not the triage label {state.config.label!r}")
    if not may_start_run(state):
        return Plan((plan_verdict(state.issue, note=NOT_STARTED_NOTE),),
                    reason=f"{labeled.sender or 'someone'} ({state.sender_role}) may not start a run")
    return Plan(plan_start(state.issue, requested_device=None, requested_by=labeled.sender))


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)
