"""Sending a repro to a triage runner: the App never executes repro code itself.

It triggers `workflow_dispatch` of the runner workflow (`.github/workflows/pt2-triage-runner.yml`,
which users copy into their repo) with four inputs: `issue-number`, `repro`, `device`, `job-id`.
The job id comes back in the run's title (`RUN_NAME`), which is how `workflow_run.completed` finds
the job, and through the job the issue, to publish to. Choosing the device and the inputs is pure (`plan_dispatch`); the
`DispatchRun` step records the runner job and sends the dispatch.
"""
from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from bot.app.github import GitHub
from bot.app.repo_config import RepoConfig
from bot.core.extract import code_blocks, reporter_environment
from bot.core.records import Classification, TriageRequest

if TYPE_CHECKING:
    from bot.app.context import JobStore
    from bot.app.store import RunnerJob

log = logging.getLogger("pt2_triage.dispatch")

# workflow_dispatch accepts at most 65,535 characters of inputs in all; a longer repro stays in the
# issue, and the runner reads it from there by issue number.
MAX_REPRO_INPUT_CHARS = 60_000


@dataclass(frozen=True)
class DispatchPlan:
    workflow: str
    ref: str
    device: str  # cpu | gpu
    job_key: str
    inputs: dict[str, str]
    note: str = ""  # said in the comment when the device differs from what was asked


def choose_device(request: TriageRequest, classification: Classification, config: RepoConfig,
                  requested: str | None = None, gpu_categories: frozenset[str] = frozenset(),
                  repro: str | None = None) -> tuple[str, str]:
    """(device, note). An explicit request wins, then what the text shows (CUDA in the repro or the
    reporter's GPU, a category whose failures need a GPU: `gpu_categories`, the ruleset's
    `needs_gpu`), then the repo's default; `gpu: false` in the config caps it."""
    repro = repro if repro is not None else next(iter(request.repro_scripts), None)
    if requested:
        device = requested
    elif request.environment.needs_gpu or classification.category in gpu_categories or \
            (repro is not None and _uses_cuda(repro)):
        device = "gpu"
    else:
        device = config.default_device
    if device == "gpu" and not config.gpu:
        return "cpu", "this repository has no GPU runners (runner.gpu: false), so it runs on CPU"
    return device, ""


def _uses_cuda(script: str) -> bool:
    return reporter_environment(script).needs_gpu


def newest_repro(request: TriageRequest) -> str | None:
    """The repro the issue shows last (a reporter's newer one goes below the first), where
    `request.repro_scripts` ranks the likeliest first."""
    found = [block.text for block in code_blocks(request.text) if block.is_python_repro]
    return found[-1] if found else None


def plan_dispatch(issue_number: int, request: TriageRequest, classification: Classification, config: RepoConfig,
                  default_workflow: str, default_branch: str, requested_device: str | None = None,
                  job_key: str | None = None, gpu_categories: frozenset[str] = frozenset(),
                  repro: str | None = None) -> DispatchPlan | None:
    """The runner job for an issue, or None when the issue has no runnable repro to send. The repro
    sent is `repro`, or by default the likeliest of the issue's."""
    if not request.repro_scripts:
        return None
    repro = repro or request.repro_scripts[0]
    device, note = choose_device(request, classification, config, requested_device, gpu_categories, repro)
    key = job_key or uuid.uuid4().hex
    inputs = {
        "issue-number": str(int(issue_number)),
        "repro": repro if len(repro) <= MAX_REPRO_INPUT_CHARS else "",
        "device": device,
        "job-id": key,
    }
    return DispatchPlan(config.runner_workflow or default_workflow, config.runner_ref or default_branch, device, key,
                        inputs, note)


@dataclass(frozen=True)
class DispatchRun:
    """The step that sends a run: the runner job is recorded (so its report finds the issue), then
    workflow_dispatch is sent, once per job."""

    repo: str
    number: int
    plan: DispatchPlan
    installation_id: int | None
    draft_pr: bool
    requested_by: str | None
    stage: str = "dispatched"

    def run(self, gh: GitHub, store: "JobStore") -> None:
        plan = self.plan
        store.add_runner_job(plan.job_key, self.repo, self.number, self.installation_id, plan.device, self.draft_pr,
                             self.requested_by)
        gh.dispatch_workflow(self.repo, plan.workflow, plan.ref, plan.inputs)
        log.info("%s#%s: dispatched %s on %s (job %s)", self.repo, self.number, plan.workflow, plan.device,
                 plan.job_key)


# The runner workflow's `run-name` (.github/workflows/pt2-triage-runner.yml), filled in with the
# dispatch's inputs: a run is the job's run only when its title is exactly this.
RUN_NAME = "pt2-triage {job_key} (issue {number}, {device})"


def run_title(job_key: str, number: int, device: str) -> str:
    """The title GitHub gives the run the App dispatched for this job."""
    return RUN_NAME.format(job_key=job_key, number=int(number), device=device)


RUN_TITLE_ISSUE = re.compile(r"^pt2-triage \S+ \(issue (\d{1,18}), \w+\)$")


def issue_of_run_title(display_title: str) -> int | None:
    """The issue a runner run's title names (`RUN_NAME`), so its report's job queues behind any other
    job on that issue (the store runs one per issue at a time). Only an ordering hint: which job the
    run belongs to, if any, is still decided by `job_key_from_run` against the store."""
    match = RUN_TITLE_ISSUE.match(display_title or "")
    return int(match.group(1)) if match else None


def job_key_from_run(display_title: str, waiting: Iterable["RunnerJob"]) -> str | None:
    """Which waiting job a completed runner run belongs to: the one whose run-name the run's title is,
    exactly. A title that merely contains a job id (a pull request named after one) matches nothing,
    and artifact names, which the run's own code chooses, are never consulted."""
    for job in waiting:
        if job.job_key and display_title == run_title(job.job_key, job.number, job.device):
            return job.job_key
    return None
