"""Comment commands as plain values: each command's plan, the refusals and the rejections."""
from __future__ import annotations

from dataclasses import replace

import pytest

from bot.app.commands import Command, Rejection
from bot.app.dispatch import DispatchRun
from bot.app.event import Issue
from bot.app.features.comment_commands import ACTIONS, CommandComment, CommandState, decide, parse
from bot.app.plan import AddLabels, React, Reply, SetOverride, UpsertComment
from bot.app.publish import Publish
from bot.core.commands_table import default_commands, help_rows

from .conftest import REPO, event, graph_break_report, labeled_issue, runner_job

NEWER_REPRO = "import torch\n\n\ndef f(x):\n    return torch.compile(lambda y: y.item())(x)\n\n\nf(torch.ones(1))\n"


def comment(body_or_command, login: str = "maintainer", issue: Issue | None = None) -> CommandComment:
    if isinstance(body_or_command, str):
        name, _, argument = body_or_command.partition(" ")
        body_or_command = Command(name, argument or None, default_commands()[name])
    return CommandComment(REPO, issue or labeled_issue(), 3001, login, body_or_command, "main")


def plan_for(rules, issue_state, command, permission="write", **issue_changes):
    return decide(comment(command), CommandState(rules, permission, issue_state(**issue_changes)))


def test_every_command_in_the_table_does_something_and_nothing_else_is_done():
    assert set(ACTIONS) == {spec.name for spec in help_rows()}


# -- parse

def test_parse_takes_a_command_addressed_to_the_bot():
    parsed = parse(event("issue_comment", "issue_comment_created"))
    assert parsed.command == Command("run", "gpu", default_commands()["run"])
    assert (parsed.repo, parsed.issue.number, parsed.comment_id, parsed.login) == (REPO, 12, 3001, "maintainer")


@pytest.mark.parametrize("body", ["LGTM", "> @pt2-triage run", "ping @pt2-triage-team"])
def test_parse_leaves_comments_that_command_nothing(body):
    payload = event("issue_comment", "issue_comment_created")
    payload.payload["comment"]["body"] = body
    assert parse(payload) is None


def test_a_bot_is_never_obeyed():
    payload = event("issue_comment", "issue_comment_created")
    payload.payload["comment"]["user"] = {**payload.payload["comment"]["user"], "type": "Bot"}
    assert parse(payload) is None


@pytest.mark.parametrize("user", [None, {"type": "User"}, {"login": "", "type": "User"}])
def test_a_comment_with_no_author_commands_nothing(user):
    payload = event("issue_comment", "issue_comment_created")
    payload.payload["comment"]["user"] = user
    assert parse(payload) is None


# -- replies

def test_a_command_written_wrong_gets_how_to_write_it_and_nothing_else(rules):
    rejected = comment(Rejection("frobnicate", "`frobnicate` is not a command I know"))
    [reply] = decide(rejected, CommandState(rules)).steps
    assert isinstance(reply, Reply) and "`frobnicate` is not a command I know" in reply.body
    assert "| `@pt2-triage run [cpu|gpu]` |" in reply.body and "@maintainer" in reply.body


def test_an_unknown_category_is_checked_against_the_rules(rules, issue_state):
    [reply] = plan_for(rules, issue_state, "category banana").steps
    assert isinstance(reply, Reply) and "`banana` is not a category; known:" in reply.body


def test_a_command_that_needs_write_access_is_refused_without_it(rules, issue_state):
    [reply] = plan_for(rules, issue_state, "run", permission="read").steps
    assert isinstance(reply, Reply) and "needs write access" in reply.body and "yours: read" in reply.body


def test_help_for_anyone(rules, issue_state):
    react, reply = plan_for(rules, issue_state, "help", permission="read").steps
    assert react == React(REPO, 3001) and "@pt2-triage draft-pr" in reply.body


# -- runs

def test_run_dispatches_on_the_device_asked_for(rules, issue_state):
    react, pending, dispatch = plan_for(rules, issue_state, "run gpu").steps
    assert react == React(REPO, 3001) and pending.stage == "pending_comment"
    assert isinstance(dispatch, DispatchRun) and dispatch.plan.device == "gpu" and dispatch.requested_by == "maintainer"


def test_rerun_runs_on_the_last_runs_device(rules, issue_state):
    steps = plan_for(rules, issue_state, "rerun", runner_jobs=(runner_job("k2", "gpu"), runner_job("k1", "cpu"))).steps
    assert steps[-1].plan.device == "gpu"


def test_minimize_sends_the_newest_repro_in_the_issue_where_rerun_sends_the_likeliest(rules, issue_state):
    issue = labeled_issue()
    updated = replace(issue, body=issue.body + f"\n\nA smaller one:\n\n```python\n{NEWER_REPRO}```\n")
    minimize = plan_for(rules, issue_state, "minimize", issue=updated).steps[-1]
    rerun = plan_for(rules, issue_state, "rerun", issue=updated).steps[-1]
    assert minimize.plan.inputs["repro"] == NEWER_REPRO.rstrip("\n")
    assert "class Gate" in rerun.plan.inputs["repro"]
    assert minimize.stage == rerun.stage == "dispatched"


# -- verdicts, overrides and republishing

def test_classify_updates_the_verdict_for_anyone(rules, issue_state):
    react, verdict = plan_for(rules, issue_state, "classify", permission="read").steps
    assert isinstance(verdict, UpsertComment) and verdict.stage == "verdict" and "Graph break" in verdict.body


def test_a_category_override_without_a_report_relabels_from_the_text(rules, issue_state, ruleset):
    react, override, verdict, labels = plan_for(rules, issue_state, "category dynamic_shapes").steps
    assert override == SetOverride(REPO, 12, "category", "dynamic_shapes", "maintainer")
    assert ruleset.categories["dynamic_shapes"].title in verdict.body
    assert labels == AddLabels(REPO, 12, tuple(ruleset.categories["dynamic_shapes"].labels))


def test_a_category_override_republishes_the_report_without_a_pr(rules, issue_state):
    react, override, publish = plan_for(rules, issue_state, "category dynamic_shapes",
                                        latest_report=graph_break_report(), comment_id=77).steps
    assert isinstance(publish, Publish) and publish.category_override == "dynamic_shapes"
    assert publish.draft_pr is False and publish.known_comment_id == 77


def test_a_test_file_override_goes_into_the_pr_when_there_is_one(rules, issue_state):
    steps = plan_for(rules, issue_state, "test-file test/dynamo/test_misc.py", latest_report=graph_break_report(),
                     runner_jobs=(runner_job(draft_pr=True),)).steps
    assert steps[1] == SetOverride(REPO, 12, "test-file", "test/dynamo/test_misc.py", "maintainer")
    assert steps[2].test_file == "test/dynamo/test_misc.py" and steps[2].draft_pr is True
    no_pr = plan_for(rules, issue_state, "test-file test/dynamo/test_misc.py", latest_report=graph_break_report(),
                     runner_jobs=(runner_job(draft_pr=False),)).steps
    assert no_pr[2].draft_pr is False


def test_draft_pr_needs_a_report(rules, issue_state):
    react, reply = plan_for(rules, issue_state, "draft-pr").steps
    assert "there is no report yet" in reply.body
    react, publish = plan_for(rules, issue_state, "draft-pr", latest_report=graph_break_report()).steps
    assert isinstance(publish, Publish) and publish.draft_pr is True
