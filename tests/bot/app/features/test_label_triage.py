"""Label triage as plain values: the triage label from a member who may label (or from the App under
`auto_suggest: label`) starts a run; from anyone else, the verdict alone; any other label does nothing."""
from __future__ import annotations

from dataclasses import replace

from bot.app.dispatch import DispatchRun
from bot.app.event import Issue
from bot.app.features.label_triage import LabelState, Labeled, decide, parse
from bot.app.plan import UpsertComment
from bot.app.repo_config import RepoConfig
from bot.core.records import Classification
from bot.pipeline.comment import COMMENT_MARKER

from .conftest import REPO, event, labeled_issue


def labeled(label: str = "pt2-triage") -> Labeled:
    return Labeled(REPO, labeled_issue(), label, "maintainer", "main")


def test_parse_takes_a_label_added_to_an_issue():
    assert parse(event("issues", "issues_labeled")) == labeled()


def test_parse_leaves_pull_requests_and_nameless_labels():
    pull_request = event("issues", "issues_labeled")
    pull_request.payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/12"}
    assert parse(pull_request) is None
    assert parse(event("issues", "issues_labeled", label={"name": ""})) is None
    assert parse(event("issues", "issues_labeled", repository={})) is None


def test_another_label_does_nothing():
    plan = decide(labeled("module: docs"), LabelState(RepoConfig(), None))
    assert plan.steps == () and "not the triage label" in plan.reason


def test_the_triage_label_posts_the_pending_comment_then_dispatches(issue_state):
    plan = decide(labeled("PT2-Triage"), LabelState(RepoConfig(), issue_state(), "triage"))
    pending, dispatch = plan.steps
    assert isinstance(pending, UpsertComment) and pending.stage == "pending_comment"
    assert pending.body.startswith(COMMENT_MARKER) and "Reproducing on a cpu runner" in pending.body
    assert dict(pending.progress) == {"job_key": "job-1"}  # kept, so a retry dispatches the same job
    assert isinstance(dispatch, DispatchRun) and dispatch.stage == "dispatched"
    assert dispatch.plan.inputs["issue-number"] == "12" and dispatch.plan.inputs["job-id"] == "job-1"
    assert dispatch.plan.workflow == "pt2-triage-runner.yml" and dispatch.plan.device == "cpu"
    assert dispatch.requested_by == "maintainer" and dispatch.draft_pr


def test_an_issue_without_a_repro_gets_the_verdict_and_a_note(issue_state):
    bare = Issue(12, "torch.compile is slow", "It takes ten minutes to compile my model.")
    plan = decide(labeled(), LabelState(RepoConfig(), issue_state(issue=bare), "triage"))
    [verdict] = plan.steps
    assert isinstance(verdict, UpsertComment) and verdict.stage == "verdict"
    assert verdict.body.startswith(COMMENT_MARKER) and "**No runnable repro found in the issue**" in verdict.body


def test_a_category_whose_failures_need_a_gpu_runs_on_one_unless_the_repo_has_none(issue_state, ruleset):
    [gpu_category] = ruleset.with_fact("needs_gpu")
    kernel_bug = Classification(category=gpu_category, confidence=0.9, signature="s")
    state = issue_state(classification=kernel_bug)
    assert decide(labeled(), LabelState(RepoConfig(), state, "triage")).steps[1].plan.device == "gpu"
    capped = replace(state, config=RepoConfig(gpu=False))
    pending, dispatch = decide(labeled(), LabelState(capped.config, capped, "triage")).steps
    assert dispatch.plan.device == "cpu" and "runner.gpu: false" in pending.body


def test_a_maintainers_category_override_is_what_the_pending_comment_says(issue_state, ruleset):
    state = issue_state(overrides={"category": "dynamic_shapes"})
    pending = decide(labeled(), LabelState(RepoConfig(), state, "triage")).steps[0]
    assert ruleset.categories["dynamic_shapes"].title in pending.body


# -- who may start a run by labeling: anyone can open an issue through a form that applies the label

def test_a_label_from_someone_who_may_not_label_posts_the_verdict_and_how_to_start_a_run(issue_state):
    for role in ("read", "none"):
        [verdict] = decide(labeled(), LabelState(RepoConfig(), issue_state(), role)).steps
        assert isinstance(verdict, UpsertComment) and verdict.stage == "verdict"
        assert verdict.body.startswith(COMMENT_MARKER) and "Graph break" in verdict.body
        assert "a maintainer can start a run of the repro with `@pt2-triage run`" in verdict.body


def test_every_role_that_may_label_starts_a_run(issue_state):
    for role in ("triage", "write", "maintain", "admin"):
        pending, dispatch = decide(labeled(), LabelState(RepoConfig(), issue_state(), role)).steps
        assert isinstance(dispatch, DispatchRun)


def test_the_apps_own_label_starts_a_run_only_where_the_maintainers_chose_auto_suggest_label(issue_state):
    """`auto_suggest: label` is the maintainers' opt-in: a stranger's confident PT2 issue runs on a
    runner (in the sandbox) with no human step. Without it, a label the App applied starts nothing."""
    opted_in = RepoConfig(auto_suggest="label")
    state = issue_state(config=opted_in)
    steps = decide(labeled(), LabelState(opted_in, state, sender_is_app=True)).steps
    assert isinstance(steps[-1], DispatchRun)
    for config in (RepoConfig(), RepoConfig(auto_suggest="off")):
        [verdict] = decide(labeled(), LabelState(config, issue_state(config=config), sender_is_app=True)).steps
        assert verdict.stage == "verdict"
