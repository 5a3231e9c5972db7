"""Comment commands as plain values: what a comment asks for, and who may ask for it."""
from __future__ import annotations

import pytest

from bot.app.commands import Command, Rejection, authorize, parse_command
from bot.app.repo_config import RepoConfig
from bot.core.commands_table import CommandTableError, default_commands, help_rows, load_command_help, load_commands

CATEGORIES = {"graph_break", "dynamic_shapes"}


def parse(body: str, categories=frozenset(CATEGORIES)):
    return parse_command(body, "pt2-triage", categories=categories)


def command(name: str, argument: str | None = None) -> Command:
    return Command(name, argument, default_commands()[name])


@pytest.mark.parametrize("body, expected", [
    ("@pt2-triage run", command("run")),
    ("@PT2-Triage: Run this on GPU please", command("run", "gpu")),
    ("@pt2-triage run cuda", command("run", "gpu")),
    ("@pt2-triage rerun", command("rerun")),
    ("@pt2-triage minimise", command("minimize")),
    ("@pt2-triage classify, please", command("classify")),
    ("@pt2-triage category dynamic-shapes", command("category", "dynamic_shapes")),
    ("@pt2-triage test-file test/dynamo/test_repros.py.", command("test-file", "test/dynamo/test_repros.py")),
    ("@pt2-triage test-file ./test/dynamo/test_repros.py", command("test-file", "test/dynamo/test_repros.py")),
    ("@pt2-triage pr", command("draft-pr")),
    ("thanks!\n\n@pt2-triage help", command("help")),
])
def test_a_command_is_read_the_way_people_write_it(body, expected):
    assert parse(body) == expected


@pytest.mark.parametrize("body", [
    "LGTM",
    "> @pt2-triage run gpu",  # a quoted command is not said again
    "```\n@pt2-triage run\n```",
    "see `@pt2-triage run` in the docs",
    "email me at someone@pt2-triage.dev",
    "@pt2-triage-bot run",  # another name
    # what GitHub shows as code, or hides, is not a request either
    "Steps:\n\n1. first\n\n    ```\n    @pt2-triage run gpu\n    ```\n",  # a fence in a list item
    "Example:\n\n    @pt2-triage run gpu\n",  # an indented code block
    "```\nhistory:\n```python\n@pt2-triage run gpu\n```\n",  # an info string opens a fence, never closes one
    "Thanks! <!-- @pt2-triage run gpu -->",
    "<!--\n@pt2-triage run gpu\n",  # an unclosed comment hides the rest
    "@pt2-tr\u0131age run gpu",  # a dotless i: GitHub mentions no one
    "@PT2-TR\u0130AGE run gpu",
])
def test_what_is_not_a_command_for_the_bot(body):
    assert parse(body) is None


def test_only_the_first_command_of_a_comment_counts():
    assert parse("@pt2-triage classify\n@pt2-triage run gpu") == command("classify")


@pytest.mark.parametrize("body, message", [
    ("@pt2-triage", "no command given"),
    ("@pt2-triage frobnicate", "`frobnicate` is not a command I know"),
    ("@pt2-triage category", "`category` needs an argument: @pt2-triage category <id>"),
    ("@pt2-triage category banana", "`banana` is not a category; known: dynamic_shapes, graph_break"),
    ("@pt2-triage test-file ../../etc/passwd.py", "`test-file` needs a relative path to a .py test file"),
])
def test_a_command_written_wrong_is_rejected_with_how_to_write_it(body, message):
    parsed = parse(body)
    assert isinstance(parsed, Rejection) and parsed.message.startswith(message)


def test_without_categories_any_category_id_is_taken():
    assert parse("@pt2-triage category banana", categories=frozenset()) == command("category", "banana")


@pytest.mark.parametrize("name, login, permission, config, allowed", [
    ("classify", "passerby", "read", RepoConfig(), True),  # costs nothing, writes nothing
    ("help", "passerby", "none", RepoConfig(), True),
    ("run", "passerby", "read", RepoConfig(), False),
    ("run", "maintainer", "write", RepoConfig(), True),
    ("category", "admin", "admin", RepoConfig(), True),
    ("draft-pr", "triager", "triage", RepoConfig(), False),
    ("run", "Alice", "read", RepoConfig(allow="users", users=("alice",)), True),
    ("run", "bob", "read", RepoConfig(allow="users", users=("alice",)), False),
    ("run", "alice", "read", RepoConfig(users=("alice",)), False),  # listed, but the repo allows write only
])
def test_who_may_run_what(name, login, permission, config, allowed):
    decision = authorize(command(name), login, permission, config)
    assert decision.allowed is allowed
    if not allowed:
        assert f"yours: {permission}" in decision.reason and "needs write access" in decision.reason


def test_the_help_rows_are_the_table_in_order_with_aliases_folded():
    rows = help_rows()
    assert [spec.name for spec in rows] == ["run", "rerun", "minimize", "classify", "category", "test-file", "draft-pr",
                                            "help"]
    assert load_command_help() == tuple((spec.usage, spec.help) for spec in rows)


def test_a_malformed_table_fails_at_load_naming_the_entry(tmp_path):
    table = tmp_path / "commands.yaml"
    table.write_text("commands:\n  - name: run\n    usage: u\n    help: h\n    args: device\n    needs_write: true\n"
                     "  - name: go\n    usage: u\n    help: h\n    args: device\n    needs_write: true\n    aliases: [run]\n")
    with pytest.raises(CommandTableError, match=r"commands\[1\]: `run` is already a command or alias"):
        load_commands(table)
    table.write_text("commands:\n  - name: run\n    usage: u\n    help: h\n    args: sometimes\n    needs_write: true\n")
    with pytest.raises(CommandTableError, match="args must be one of none, device, category, path"):
        load_commands(table)
