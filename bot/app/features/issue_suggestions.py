"""New-issue suggestions: an issue opened or edited without the triage label, whose text shows a PT2
failure with confidence, gets one suggestion (a comment, or the label itself), once per issue."""
from __future__ import annotations

from dataclasses import dataclass

from bot.app.context import JobContext, JobStore, Rules
from bot.app.event import Event, Issue
from bot.app.github import GitHub
from bot.app.plan import AddLabels, Once, Plan, Reply, carry_out
from bot.app.repo_config import RepoConfig
from bot.core.records import Classification
from bot.core.render import render

ROUTES = frozenset({("issues", "opened"), ("issues", "edited")})
SUGGEST_MIN_CONFIDENCE = 0.7
NOTICE = "suggestion"


@dataclass(frozen=True)
class IssueText:
    repo: str
    issue: Issue


@dataclass(frozen=True)
class SuggestState:
    config: RepoConfig
    rules: Rules
    classification: Classification | None  # read only when a suggestion may be made


def parse(event: Event) -> IssueText | None:
    issue = Issue.from_payload(event.payload.get("issue"))
    if not event.repo or issue is None or issue.is_pull_request:
        return None
    return IssueText(event.repo, issue)


def may_suggest(issue: Issue, config: RepoConfig) -> bool:
    """Suggestions are on, and the issue does not carry the triage label already."""
    return config.auto_suggest != "off" and not issue.has_label(config.label)


def observe(text: IssueText, ctx: JobContext) -> SuggestState:
    config = ctx.config(text.issue.number)
    classification = ctx.services.classifier.classify_text(text.issue.text) if may_suggest(text.issue, config) else None
    return SuggestState(config, ctx.rules, classification)


def decide(text: IssueText, state: SuggestState) -> Plan:
    verdict = state.classification
    if verdict is None or not may_suggest(text.issue, state.config):
        return Plan.nothing("suggestions are off, or the issue has the triage label")
    if not state.rules.ruleset.is_pt2_category(verdict.category) or verdict.unsure \
            or verdict.confidence < SUGGEST_MIN_CONFIDENCE:
        return Plan.nothing(f"no confident PT2 verdict ({verdict.category}, {verdict.confidence:.2f})")
    number, config = text.issue.number, state.config
    if config.auto_suggest == "label":
        suggestion = AddLabels(text.repo, number, (config.label,))
    else:
        category = state.rules.ruleset.categories[verdict.category]
        suggestion = Reply(text.repo, number, render("suggestion.md.j2", category=category, label=config.label,
                                                     bot_name=state.rules.bot_name, confidence=verdict.confidence))
    return Plan((Once(text.repo, number, NOTICE, suggestion),))


def act(plan: Plan, gh: GitHub, store: JobStore) -> None:
    """The plan's steps, in order, each once (checkpointed)."""
    carry_out(plan, gh, store)
