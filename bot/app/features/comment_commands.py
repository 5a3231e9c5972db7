"""Comment commands: `@pt2-triage <command>` in an issue or PR comment (the table: bot/rules/commands.yaml).

A command written wrong gets a reply saying how to write it; one that spends runner time or writes
to the repository is refused, politely, to users without write access (bot/app/commands.py
decides both). An accepted command gets an 👀 reaction, then does what its help text says.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from bot.app.commands import Command, Rejection, authorize, check_category, parse_command
from bot.app.context import JobContext, JobStore, Rules
from bot.app.event import Event, Issue, payload_integer, payload_object, payload_string
from bot.app.github import GitHub
from bot.app.issue_triage import IssueState, observe_issue, plan_start, plan_verdict
from bot.app.plan import AddLabels, Plan, React, Reply, SetOverride, Step, carry_out
from bot.app.publish import plan_publish
from bot.core.commands_table import help_rows
from bot.core.render import render

ROUTES = frozenset({("issue_comment", "created")})


@dataclass(frozen=True)
class CommandComment:
    repo: str
    issue: Issue
    comment_id: int
    login: str
    command: Command | Rejection  # category ids are checked against the ruleset in `decide`
    default_branch: str


@dataclass(frozen=True)
class CommandState:
    rules: Rules
    permission: str = "read"  # the commenter's role; asked only for commands that need write access
    issue: IssueState | None = None  # read for commands, not for rejections


def parse(event: Event) -> CommandComment | None:
    """A comment by a person that addresses a command to the bot (bots are never obeyed). A comment
    with no author login (a deleted account's `user: null`) commands nothing: whose permission
    would decide, and whom would the reply address?"""
    comment = event.member("comment")
    user = payload_object(comment.get("user"))
    body, comment_id = payload_string(comment.get("body")), payload_integer(comment.get("id"))
    login = payload_string(user.get("login"))
    issue = Issue.from_payload(event.payload.get("issue"))
    if not event.repo or issue is None or body is None or comment_id is None or not login or user.get("type") == "Bot":
        return None
    command = parse_command(body, event.bot_name)
    if command is None:
        return None
    return CommandComment(event.repo, issue, comment_id, login, command, event.default_branch)


def observe(comment: CommandComment, ctx: JobContext) -> CommandState:
    if isinstance(comment.command, Rejection):
        return CommandState(ctx.rules)
    config = ctx.config(comment.issue.number)
    needs_write = comment.command.spec.needs_write
    permission = ctx.gh.permission(comment.repo, comment.login) if needs_write else "read"
    return CommandState(ctx.rules, permission, observe_issue(ctx, comment.issue, config, comment.default_branch))


def decide(comment: CommandComment, state: CommandState) -> Plan:
    command = comment.command
    if isinstance(command, Command):
        command = check_category(command, frozenset(state.rules.ruleset.categories))
    if isinstance(command, Rejection) or state.issue is None:
        message = command.message if isinstance(command, Rejection) else "no command given"
        return Plan((reply(comment, state.rules, "command_rejected.md.j2", message=message),))
    decision = authorize(command, comment.login, state.permission, state.issue.config)
    if not decision.allowed:
        return Plan((reply(comment, state.rules, "command_refused.md.j2", reason=decision.reason),))
    steps = ACTIONS[command.name](command, comment, state.issue)
    return Plan((React(comment.repo, comment.comment_id), *steps))


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)


def reply(comment: CommandComment, rules: Rules, template: str, **values) -> Reply:
    body = render(template, commands=help_rows(), bot_name=rules.bot_name, login=comment.login, **values)
    return Reply(comment.repo, comment.issue.number, body)


# ---------------------------------------------------------------- what each command does (pure)

def previous_device(issue: IssueState) -> str | None:
    return issue.runner_jobs[0].device if issue.runner_jobs else None


def run(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    return plan_start(issue, requested_device=command.argument, requested_by=comment.login)


def rerun(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    """The last triage again, on the same device."""
    return plan_start(issue, requested_device=previous_device(issue), requested_by=comment.login)


def minimize(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    """The triage again (the runner reproduces, then shrinks the repro to a minimal failing script),
    from the newest repro in the issue: the one it shows last, not the likeliest."""
    return plan_start(issue, requested_device=previous_device(issue), requested_by=comment.login, newest=True)


def classify(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    return (plan_verdict(issue),)


def category(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    override = SetOverride(comment.repo, issue.issue.number, "category", command.argument or "", comment.login)
    return (override, *republish(issue, {**issue.overrides, "category": override.value}, draft_pr=False))


def test_file(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    override = SetOverride(comment.repo, issue.issue.number, "test-file", command.argument or "", comment.login)
    has_pr = any(job.draft_pr for job in issue.runner_jobs)
    return (override, *republish(issue, {**issue.overrides, "test-file": override.value},
                                 draft_pr=issue.config.draft_pr and has_pr))


def draft_pr(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    if issue.latest_report is None:
        return (reply(comment, issue.rules, "command_rejected.md.j2",
                      message="there is no report yet to take a test from: run the triage first"),)
    return republish(issue, issue.overrides, draft_pr=True)


def help_(command: Command, comment: CommandComment, issue: IssueState) -> tuple[Step, ...]:
    return (reply(comment, issue.rules, "help.md.j2"),)


def republish(issue: IssueState, overrides: dict[str, str], draft_pr: bool) -> tuple[Step, ...]:
    """The latest report again with the current overrides; the verdict from the text if there is none."""
    number = issue.issue.number
    if issue.latest_report is None:
        verdict = plan_verdict(issue, overrides)
        category_id = overrides.get("category")
        if not category_id:
            return (verdict,)
        return verdict, AddLabels(issue.repo, number, tuple(issue.rules.ruleset.categories[category_id].labels))
    return (plan_publish(issue.repo, number, issue.latest_report, issue.rules, issue.config, overrides,
                         issue.comment_id, draft_pr),)


ACTIONS: dict[str, Callable[[Command, CommandComment, IssueState], tuple[Step, ...]]] = {
    "run": run, "rerun": rerun, "minimize": minimize, "classify": classify, "category": category,
    "test-file": test_file, "draft-pr": draft_pr, "help": help_,
}
