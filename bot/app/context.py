"""What the features work with: the App's services, the fixed knowledge their decisions use, and one
job's view of the store (its checkpoints) and of the watched repository's config.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from bot.app.github import GitHub
from bot.app.repo_config import CONFIG_PATH, ConfigResult, RepoConfig, parse_repo_config
from bot.app.settings import Settings
from bot.app.store import Job, Store
from bot.core.classify import Classifier
from bot.core.graph_breaks import GraphBreakRegistry
from bot.core.render import render
from bot.core.ruleset import Ruleset

CONFIG_TTL_S = 60


@dataclass(frozen=True)
class Rules:
    """The App's fixed knowledge a decision may use: the rule tables, the graph-break registry, the
    @name comments address, and the runner workflow dispatched when the repo config names none."""

    ruleset: Ruleset
    registry: GraphBreakRegistry | None = None
    bot_name: str = "pt2-triage"
    runner_workflow: str = "pt2-triage-runner.yml"

    def runner_workflow_for(self, config: RepoConfig) -> str:
        """The workflow file runs are dispatched to: the repo config's, else the App's."""
        return config.runner_workflow or self.runner_workflow


@dataclass
class Services:
    """What every feature may use; built once per process by the app factory."""

    settings: Settings
    store: Store
    github_for: Callable[[int | None], GitHub]  # installation id -> client
    classifier: Classifier
    registry: GraphBreakRegistry | None
    clock: Callable[[], float] = time.time
    lease_s: float = 120.0
    _configs: dict[str, tuple[float, ConfigResult, str | None]] = field(default_factory=dict)

    @property
    def ruleset(self) -> Ruleset:
        return self.classifier.ruleset

    @property
    def rules(self) -> Rules:
        return Rules(self.ruleset, self.registry, self.settings.bot_name, self.settings.runner_workflow)


class JobStore:
    """The store as one job's steps see it: the shared state (comments, overrides, reports, ...),
    and this job's checkpoints, which say which of its steps are done."""

    def __init__(self, store: Store, job: Job, lease_s: float):
        self.store, self.job, self.lease_s = store, job, lease_s

    def done(self, stage: str) -> bool:
        return stage in self.job.progress.get("stages", [])

    def checkpoint(self, stage: str, **progress) -> None:
        """Record that `stage` is done (and what it produced); renews the job's lease."""
        stages = self.job.progress.get("stages", []) + [stage]
        self.store.checkpoint(self.job, stage, self.lease_s, stages=stages, **progress)

    def progress(self, key: str) -> Any:
        return self.job.progress.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)  # everything else is the shared Store's


@dataclass
class JobContext:
    """One job being handled: the services, the job, its GitHub client and its view of the store."""

    services: Services
    job: Job
    gh: GitHub

    def __post_init__(self):
        self.store = JobStore(self.services.store, self.job, self.services.lease_s)

    @property
    def repo(self) -> str:
        return self.job.repo

    @property
    def rules(self) -> Rules:
        return self.services.rules

    def config(self, number: int | None) -> RepoConfig:
        """The repo's `.github/pt2-triage.yml`, cached for a minute; its problems are posted once
        per version of the file, on the issue that met them."""
        cached = self.services._configs.get(self.repo)
        now = self.services.clock()
        if cached is None or now - cached[0] > CONFIG_TTL_S:
            found = self.gh.file_text(self.repo, CONFIG_PATH)
            result = parse_repo_config(found[0] if found else None, set(self.services.ruleset.categories))
            cached = (now, result, found[1] if found else None)
            self.services._configs[self.repo] = cached
        _, result, sha = cached
        if result.problems and number and self.store.claim_notice(self.repo, number, f"config:{sha}"):
            try:
                self.gh.post_comment(self.repo, number, render("config_error.md.j2", problems=result.problems,
                                                               path=CONFIG_PATH), reply_id=f"config:{sha}")
            except Exception:
                self.store.release_notice(self.repo, number, f"config:{sha}")
                raise
        return result.config
