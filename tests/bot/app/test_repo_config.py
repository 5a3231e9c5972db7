"""`.github/pt2-triage.yml` as plain values: every field, and a clear problem for every mistake."""
from __future__ import annotations

import pytest

from bot.app.repo_config import ConfigResult, RepoConfig, parse_repo_config

CATEGORIES = {"graph_break", "dynamic_shapes"}
FULL = """
label: compile-triage
auto_suggest: label
draft_pr: false
commands:
  allow: users
  users: [alice, bob]
runner:
  workflow: triage.yml
  ref: ci-infra
  default_device: gpu
  gpu: true
ci:
  watch: true
  workflows: [trunk, pull.yml]
test_files:
  graph_break: test/dynamo/test_repros.py
"""


def test_no_file_or_an_empty_one_is_all_defaults():
    assert parse_repo_config(None) == ConfigResult(RepoConfig())
    assert parse_repo_config("  \n") == ConfigResult(RepoConfig())
    assert parse_repo_config("# nothing but a comment\n") == ConfigResult(RepoConfig())


def test_every_field_is_read():
    result = parse_repo_config(FULL, CATEGORIES)
    assert result.problems == ()
    assert result.config == RepoConfig(label="compile-triage", auto_suggest="label", draft_pr=False, allow="users",
                                       users=("alice", "bob"), runner_workflow="triage.yml", runner_ref="ci-infra",
                                       default_device="gpu", gpu=True, ci_watch=True, ci_workflows=("trunk", "pull.yml"),
                                       test_files={"graph_break": "test/dynamo/test_repros.py"})


def test_a_bare_off_is_off_though_yaml_reads_it_as_false():
    assert parse_repo_config("auto_suggest: off\n").config.auto_suggest == "off"


@pytest.mark.parametrize("text, problem", [
    ("draft-pr: true\n", "unknown setting `draft-pr`; did you mean `draft_pr`?"),
    ("draft_pr: yes please\n", "`draft_pr` must be true or false, not 'yes please'"),
    ("auto_suggest: loudly\n", "`auto_suggest` must be one of off, comment, label, not 'loudly'"),
    ("runner: cpu\n", "`runner` must be a mapping"),
    ("runner:\n  default_device: tpu\n", "`runner.default_device` must be one of cpu, gpu, not 'tpu'"),
    ("commands:\n  users: alice\n", "`commands.users` must be a list of names"),
    ("label: ''\n", "`label` must be a non-empty string"),
    ("test_files:\n  banana: test/x.py\n", "`test_files.banana`: unknown category"),
    ("test_files:\n  graph_break: ../outside.py\n", "`test_files.graph_break` must be a relative path to a .py file"),
    ("label: [unclosed\n", "is not valid YAML"),
    ("- a list\n", "must be a mapping of settings, not list"),
])
def test_a_mistake_is_a_problem_and_the_default_stays(text, problem):
    result = parse_repo_config(text, CATEGORIES)
    assert any(problem in found for found in result.problems), result.problems
    assert result.config.draft_pr is True and result.config.label == "pt2-triage"


def test_who_may_run_commands_and_which_workflows_are_watched():
    config = parse_repo_config(FULL, CATEGORIES).config
    assert config.may_run("Alice", has_write=False) and not config.may_run("carol", has_write=False)
    assert RepoConfig().may_run("carol", has_write=True)
    assert config.watches("trunk", "trunk.yml") and config.watches("Pull", "pull.yml")
    assert not config.watches("nightly", "nightly.yml") and RepoConfig().watches("anything", "any.yml")
    assert not RepoConfig(ci_watch=False).watches("trunk", "trunk.yml")


def test_a_problem_quotes_the_file_briefly_and_inertly():
    result = parse_repo_config("draft_pr: '@octo-org/everyone " + "x" * 70_000 + "'\n\"`odd`\": 1\n", CATEGORIES)
    key_problem, bool_problem = result.problems
    assert len(bool_problem) < 200 and "@octo-org" not in bool_problem and "@\u200bocto-org" in bool_problem
    assert key_problem.startswith("unknown setting `` `odd` ``")


def test_a_file_of_many_mistakes_lists_a_bounded_number():
    result = parse_repo_config("".join(f"typo_{i}: 1\n" for i in range(5_000)), CATEGORIES)
    assert len(result.problems) == 21 and result.problems[-1] == "and 4980 more problems"


def test_a_config_with_a_long_mistake_still_gets_its_notice_and_the_triage_runs(app, deliver, fake):
    """The notice used to quote the whole value: GitHub refused the comment (422), and every job of
    the repository failed on it, so one pasted value silenced the bot until the file was fixed."""
    from .conftest import drain

    fake.files[("main", ".github/pt2-triage.yml")] = "draft_pr: " + "x" * 70_000 + "\n"
    deliver("issues_labeled")
    drain(app)
    assert [e for e in fake.exchanges if e.status == 422] == [] and len(fake.dispatches) == 1
    [notice] = [c for c in fake.comments_on(12) if "has a problem" in c["body"]]
    assert len(notice["body"]) < 1_000
