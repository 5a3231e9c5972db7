"""CI watch and its comments as plain values: which failed runs are watched, what the comments say."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bot.app.ci_publish import CiComment, comment_targets, plan_ci_comments
from bot.app.features.ci_watch import CiState, FailedRun, decide, parse
from bot.app.github import Comment
from bot.app.plan import RecordFingerprints
from bot.app.repo_config import RepoConfig
from bot.pipeline.ci_failure import CI_MARKER, JobLog, analyze_run, render_ci_comment
from tests.paths import FIXTURES

from .conftest import REPO, event

LINT = JobLog(62, "lint", "https://github.com/x/62", b"ruff: E501 line too long\nError: exit 1\n", ("Lint",))


@pytest.fixture
def failed_run() -> FailedRun:
    return parse(event("workflow_run", "workflow_run_completed_ci_failure"))


@pytest.fixture
def report(classifier):
    def make(run_id: int = 30433642, pull_requests=(7,), pt2: bool = True):
        logs = [LINT]
        if pt2:
            logs.insert(0, JobLog(61, "test (inductor, 1, 2)", "https://github.com/x/61",
                                  (FIXTURES / "inductor_cpp_compile_error.log").read_bytes(), ("Test",)))
        return analyze_run(REPO, run_id, f"https://github.com/{REPO}/actions/runs/{run_id}", "trunk", "6dcb09b5",
                           tuple(pull_requests), logs, classifier)
    return make


def test_parse_takes_failed_runs_only(failed_run):
    assert failed_run.repo == REPO and failed_run.run.conclusion == "failure"
    assert parse(event("workflow_run", "workflow_run_completed_runner")) is None  # it succeeded


def test_a_pt2_failure_is_commented_on_each_pr_and_its_signatures_counted(rules, failed_run, report):
    ci = report()
    comment, fingerprints = decide(failed_run, CiState(RepoConfig(), rules, ci)).steps
    assert comment == CiComment(REPO, "pr", "7", render_ci_comment(ci), None)
    assert comment.stage == "ci_comment:pr:7"
    assert fingerprints == RecordFingerprints(REPO, tuple((f.signature, f.category, f.job_url) for f in ci.pt2_findings))
    assert [f.job_name for f in ci.pt2_findings] == ["test (inductor, 1, 2)"]


def test_ordinary_test_failures_get_nothing(rules, failed_run, report):
    plan = decide(failed_run, CiState(RepoConfig(), rules, report(pt2=False)))
    assert plan.steps == () and "no failed job is a PT2 failure" in plan.reason


@pytest.mark.parametrize("config", [RepoConfig(ci_watch=False), RepoConfig(ci_workflows=("pull",)),
                                    RepoConfig(runner_workflow="trunk.yml")])
def test_a_run_the_repo_does_not_watch_gets_nothing(rules, failed_run, report, config):
    assert decide(failed_run, CiState(config, rules, report())).steps == ()


def test_the_workflows_watched_may_be_named_by_name_or_file(rules, failed_run, report):
    for watched in ("trunk", "trunk.yml"):
        assert decide(failed_run, CiState(RepoConfig(ci_workflows=(watched,)), rules, report())).steps


def test_a_later_run_updates_the_comment_and_carries_the_earlier_run(report):
    first = report(run_id=501)
    earlier = Comment(9001, "https://github.com/x#9001", render_ci_comment(first))
    [comment] = plan_ci_comments(report(run_id=502), {7: earlier}, {"pr:7": 1234})
    assert comment.known_id == 9001  # the comment found on the PR wins over the remembered id
    assert "Earlier failed runs on this PR (1)" in comment.body and comment.body.startswith(CI_MARKER)
    [remembered] = plan_ci_comments(report(run_id=502), {7: None}, {"pr:7": 1234})
    assert remembered.known_id == 1234


def test_a_run_with_no_pr_is_commented_on_its_commit(report):
    ci = report(pull_requests=())
    assert comment_targets(ci) == [("commit", "6dcb09b5")]
    [comment] = plan_ci_comments(ci, {}, {"commit:6dcb09b5": 5})
    assert (comment.target, comment.key, comment.known_id) == ("commit", "6dcb09b5", 5)
    assert plan_ci_comments(replace(ci, findings=()), {}, {}) == ()


def test_a_pipe_in_a_failing_test_id_stays_in_its_table_cell(classifier):
    """GitHub splits a table row at every `|`, inside a code span too: the id's second half would be
    a cell of markdown of its own (a PR's test ids are the PR author's to choose)."""
    log = (b"FAILED test/inductor/test_x.py::TestX::test_op[a|![i](https://e.example/x.png)] - boom\n"
           + (FIXTURES / "inductor_cpp_compile_error.log").read_bytes())
    ci = analyze_run(REPO, 1, f"https://github.com/{REPO}/actions/runs/1", "trunk", "6dcb09b5", (7,),
                     [JobLog(61, "test (inductor, 1, 2)", "https://github.com/x/61", log, ("Test",))], classifier)
    row = next(line for line in render_ci_comment(ci).splitlines() if line.startswith("| [test (inductor"))
    assert "test_op[a\\|![i]" in row and len(re.findall(r"(?<!\\)\|", row)) == 4
