"""Publishing a triage report on the trusted side: the one comment, the labels, the draft PR.

Used by the App when a runner's `report.json` arrives and by `pt2-triage publish` (the Action's
publish job). Deciding what to write is pure (`comment_for`, `labels_for`, `plan_test_change`);
`publish_report` does the writes through `bot.app.github`, each of them idempotent, so publishing the
same report twice changes nothing and a rerun's report updates the comment and the PR in place.
"""
from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping

from bot.core.commands_table import load_command_help
from bot.pipeline.comment import COMMENT_MARKER, render_comment
from bot.app.github import Comment, GitHub, PullRequest
from bot.core.graph_breaks import GraphBreakRegistry
from bot.core.markdown import inert_line, quoted
from bot.pipeline.test_patch import add_method_to_file, required_imports
from bot.core.render import render
from bot.core.report import TriageReport, with_known_category
from bot.core.ruleset import Ruleset

if TYPE_CHECKING:
    from bot.app.context import JobStore, Rules
    from bot.app.repo_config import RepoConfig

log = logging.getLogger("pt2_triage.publish")

BRANCH_TEMPLATE = "pt2-triage/issue-{number}"
# Every commit the App makes on the test branch says this: the test holds a stranger's repro, and a push
# or PR made with an installation token starts the repository's `push` and `pull_request` workflows,
# which on a branch of the repository itself may read its secrets. GitHub skips those workflows for a
# push, and for a PR whose head commit, carries it; a maintainer starts CI after reading the test.
SKIP_CI = "[skip ci]"
HUMAN_OVERRIDE_RULE = "human override"
# A test file is committed only at a plain relative .py path of these characters, with no `.`, `..` or
# empty segment: it becomes part of a contents-API URL, and `..` there would reach another repository.
# The path the report suggests (the runner wrote it: untrusted) must also be under one of these folders.
TEST_PATH_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*\.py")
SUGGESTED_PATH_PREFIXES = ("test/",)


@dataclass(frozen=True)
class TestChange:
    """What the draft PR commits: the whole new text of one file."""

    path: str
    text: str
    added_to_existing: bool


@dataclass(frozen=True)
class PublishResult:
    comment: Comment
    labels: tuple[str, ...]
    pull_request: PullRequest | None = None
    pull_request_note: str | None = None  # why there is no PR, when there is none

    def to_dict(self) -> dict:
        return {"comment_url": self.comment.html_url, "comment_id": self.comment.id, "labels": list(self.labels),
                "pr_url": self.pull_request.html_url if self.pull_request else None,
                "pr_number": self.pull_request.number if self.pull_request else None,
                "pr_note": self.pull_request_note}


# ---------------------------------------------------------------- decisions (pure)

def with_category_override(report: TriageReport, category: str | None) -> TriageReport:
    """A maintainer's `category <id>` wins over the classifier, and says so in the report."""
    if not category or category == report.classification.category:
        return report
    return replace(report, classification=replace(report.classification, category=category, rule=HUMAN_OVERRIDE_RULE))


NEEDS_TRIAGE = "needs triage"


def labels_for(report: TriageReport, ruleset: Ruleset) -> tuple[str, ...]:
    """The labels a PyTorch maintainer would apply for the category (from categories.yaml); none of
    them, and `needs triage`, while the verdict is unsure and no run has settled it."""
    reproduced = report.reproduction is not None and report.reproduction.reproduced
    if report.classification.unsure and not reproduced:
        return (NEEDS_TRIAGE,)
    return tuple(ruleset.categories[report.classification.category].labels)


def comment_for(report: TriageReport, ruleset: Ruleset, registry: GraphBreakRegistry | None,
                pull_request: PullRequest | None = None, fixed: bool = False) -> str:
    return render_comment(report, ruleset, registry, commands=load_command_help(), fixed=fixed, pull_request=pull_request)


def branch_for(issue_number: int) -> str:
    return BRANCH_TEMPLATE.format(number=int(issue_number))


def unsafe_test_path(path: str, prefixes: tuple[str, ...] = ()) -> str | None:
    """Why a test file cannot be committed at `path` (None when it can): not a plain relative .py path
    (TEST_PATH_RE), or not under one of `prefixes` when they are given."""
    if not TEST_PATH_RE.fullmatch(path) or ".." in path.split("/"):
        return f"the test file {path[:80]!r} is not a relative path to a .py file"
    if prefixes and not path.startswith(prefixes):
        return f"the test file {path[:80]!r} is not under {', '.join(prefixes)}"
    return None


def draft_pull_refusal(report: TriageReport, test_file: str | None) -> str | None:
    """Why the report gets no draft PR (None when it may have one): no test, a disposition that wants
    none, or a test file path that is not safe to commit (the report's own under `test/` only)."""
    if report.regression_test is None:
        return "no regression test was generated"
    if report.disposition and not report.disposition.wants_regression_test:
        return f"a {report.disposition.kind.replace('_', ' ')} gets no regression test PR ({report.disposition.reason})"
    if report.test_suggestion and (problem := unsafe_test_path(report.test_suggestion.path, SUGGESTED_PATH_PREFIXES)):
        return f"the report's suggestion: {problem}"
    if test_file and (problem := unsafe_test_path(test_file)):
        return problem
    return None


def new_test_path(report: TriageReport, issue_number: int) -> str:
    """Where a generated test goes when the suggested file is not in the repository."""
    folder = posixpath.dirname(report.test_suggestion.path) if report.test_suggestion else "test"
    return posixpath.join(folder or "test", f"test_pt2_triage_issue_{int(issue_number)}.py")


def plan_test_change(report: TriageReport, issue_number: int, target_path: str | None,
                     existing_text: str | None) -> TestChange | None:
    """The file the draft PR commits: the method added to the existing suggested file when it is
    there (and parses), else the standalone test file under a new name. None without a test."""
    test = report.regression_test
    if test is None:
        return None
    if target_path and existing_text is not None:
        class_name = report.test_suggestion.test_class if report.test_suggestion else None
        try:
            return TestChange(target_path, add_method_to_file(existing_text, test.method_source, class_name,
                                                              required_imports(test)), True)
        except (ValueError, SyntaxError) as exc:
            log.info("cannot add the test to %s (%s); committing it as a new file", target_path, exc)
    return TestChange(new_test_path(report, issue_number), test.file_source, False)


def commit_message(change: TestChange, issue_number: int) -> str:
    """The test commit's message, always with SKIP_CI: the first commit and every re-run's update alike,
    so the PR's head commit never starts CI with code no maintainer has read."""
    verb = "Add" if not change.added_to_existing else "Add a test to"
    return f"{verb} {change.path}: regression test for #{int(issue_number)} (pt2-triage) {SKIP_CI}"


def pull_request_text(report: TriageReport, issue_number: int, change: TestChange, ruleset: Ruleset) -> tuple[str, str]:
    category = ruleset.categories[report.classification.category]
    test = report.regression_test
    title = f"[pt2-triage] Regression test for #{int(issue_number)}: {inert_line(category.title, 80)}"
    body = render("draft_pr.md.j2", report=report, issue_number=int(issue_number), change=change, test=test,
                  category=category, skip_ci=SKIP_CI, inert_line=inert_line, quoted=quoted)
    return title, body


# ---------------------------------------------------------------- the writes

def open_draft_pull(gh: GitHub, repo: str, issue_number: int, report: TriageReport, ruleset: Ruleset,
                    test_file: str | None = None) -> tuple[PullRequest | None, str | None]:
    """Branch `pt2-triage/issue-N` from the default branch, the test committed, one draft PR.

    A rerun commits onto the same branch (only when the file changed) and edits the same PR. Every
    commit carries SKIP_CI (`commit_message`), and the PR body says why CI did not start.
    Returns (PR, None) or (None, the reason there is none).
    """
    refusal = draft_pull_refusal(report, test_file)
    if refusal:
        log.info("%s#%s: no draft PR: %s", repo, issue_number, refusal)
        return None, refusal
    base = gh.default_branch(repo)
    target = test_file or (report.test_suggestion.path if report.test_suggestion else None)
    existing = gh.file_text(repo, target, ref=base) if target else None
    change = plan_test_change(report, issue_number, target, existing[0] if existing else None)
    branch = branch_for(issue_number)
    base_sha = gh.branch_sha(repo, base)
    if base_sha is None:
        return None, f"the default branch {base} has no head commit"
    gh.ensure_branch(repo, branch, base_sha)
    gh.put_file(repo, change.path, change.text, branch, commit_message(change, issue_number))
    title, body = pull_request_text(report, issue_number, change, ruleset)
    return gh.upsert_draft_pull(repo, branch, base, title, body), None


def publish_report(gh: GitHub, repo: str, issue_number: int, report: TriageReport, ruleset: Ruleset,
                   registry: GraphBreakRegistry | None = None, *, draft_pr: bool = False,
                   known_comment_id: int | None = None, category_override: str | None = None,
                   test_file: str | None = None, apply_labels: bool = True, fixed: bool = False) -> PublishResult:
    """Everything a finished report leads to, in an order where a failure part-way is safe to redo:
    the comment and labels first, so a draft PR that cannot be opened never costs the issue its
    report; the comment then names the PR. A category the ruleset does not know shows as `unknown`."""
    report = with_category_override(with_known_category(report, frozenset(ruleset.categories)), category_override)
    body = comment_for(report, ruleset, registry, None, fixed=fixed)
    comment = gh.upsert_comment(repo, issue_number, body, COMMENT_MARKER, known_id=known_comment_id)
    labels = labels_for(report, ruleset) if apply_labels else ()
    gh.add_labels(repo, issue_number, list(labels))
    pull_request, note = (None, "draft PRs are off")
    if draft_pr:
        pull_request, note = open_draft_pull(gh, repo, issue_number, report, ruleset, test_file)
    if pull_request is not None:
        with_pull = comment_for(report, ruleset, registry, pull_request, fixed=fixed)
        if with_pull != body:
            comment = gh.upsert_comment(repo, issue_number, with_pull, COMMENT_MARKER, known_id=comment.id)
    log.info("published %s#%s: comment %s, labels %s, PR %s", repo, issue_number, comment.id, labels,
             pull_request.number if pull_request else note)
    return PublishResult(comment, labels, pull_request, note)


# ---------------------------------------------------------------- the App's publish step

@dataclass(frozen=True)
class Publish:
    """The step that publishes a report to its issue (the App's side of `publish_report`), with the
    maintainers' overrides; the comment's id is remembered, and the job checkpointed after it."""

    repo: str
    number: int
    report: TriageReport
    rules: "Rules"
    draft_pr: bool
    known_comment_id: int | None = None
    category_override: str | None = None
    test_file: str | None = None
    fixed: bool = False
    stage: str = "published"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        result = publish_report(gh, self.repo, self.number, self.report, self.rules.ruleset, self.rules.registry,
                                draft_pr=self.draft_pr, known_comment_id=self.known_comment_id,
                                category_override=self.category_override, test_file=self.test_file, fixed=self.fixed)
        store.remember_comment(self.repo, self.number, result.comment.id)


def plan_publish(repo: str, number: int, report: TriageReport, rules: "Rules", config: "RepoConfig",
                 overrides: Mapping[str, str], comment_id: int | None, draft_pr: bool, fixed: bool = False) -> Publish:
    """Publishing `report` with the overrides: a category override wins, and the test goes into the
    file a maintainer named, else the repo config's file for the category."""
    category = overrides.get("category") or report.classification.category
    return Publish(repo, number, report, rules, draft_pr, known_comment_id=comment_id,
                   category_override=overrides.get("category"),
                   test_file=overrides.get("test-file") or config.test_files.get(category), fixed=fixed)
