"""Sending a repro to a triage runner: the App never executes repro code itself.

It triggers `workflow_dispatch` of the runner workflow (`.github/workflows/pt2-triage-runner.yml`,
which users copy into their repo) with four inputs: `issue-number`, `repro`, `device`, `job-id`.
The job id comes back in the run's title and artifact, which is how `workflow_run.completed`
finds the issue to publish to. Choosing the device and the inputs is pure (`plan_dispatch`).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from bot.app.github import GitHub
from bot.core.records import Classification, TriageRequest
from bot.app.repo_config import RepoConfig

# workflow_dispatch accepts at most 65,535 characters of inputs in all; a longer repro stays in the
# issue, and the runner reads it from there by issue number.
MAX_REPRO_INPUT_CHARS = 60_000
# Categories whose failures only exist on a GPU (generated Triton kernels, CUDA graphs, ...).
GPU_CATEGORIES = frozenset({"triton_kernel_bug"})


@dataclass(frozen=True)
class DispatchPlan:
    workflow: str
    ref: str
    device: str  # cpu | gpu
    job_key: str
    inputs: dict[str, str]
    note: str = ""  # said in the comment when the device differs from what was asked


def choose_device(request: TriageRequest, classification: Classification, config: RepoConfig,
                  requested: str | None = None) -> tuple[str, str]:
    """(device, note). An explicit request wins, then what the text shows (CUDA in the repro or the
    reporter's GPU, a GPU-only category), then the repo's default; `gpu: false` in the config caps it."""
    if requested:
        device = requested
    elif request.environment.needs_gpu or classification.category in GPU_CATEGORIES or \
            any(_uses_cuda(script) for script in request.repro_scripts[:1]):
        device = "gpu"
    else:
        device = config.default_device
    if device == "gpu" and not config.gpu:
        return "cpu", "this repository has no GPU runners (runner.gpu: false), so it runs on CPU"
    return device, ""


def _uses_cuda(script: str) -> bool:
    from bot.core.extract import reporter_environment

    return reporter_environment(script).needs_gpu


def plan_dispatch(issue_number: int, request: TriageRequest, classification: Classification, config: RepoConfig,
                  default_workflow: str, default_branch: str, requested_device: str | None = None,
                  job_key: str | None = None) -> DispatchPlan | None:
    """The runner job for an issue, or None when the issue has no runnable repro to send."""
    if not request.repro_scripts:
        return None
    device, note = choose_device(request, classification, config, requested_device)
    key = job_key or uuid.uuid4().hex
    repro = request.repro_scripts[0]
    inputs = {
        "issue-number": str(int(issue_number)),
        "repro": repro if len(repro) <= MAX_REPRO_INPUT_CHARS else "",
        "device": device,
        "job-id": key,
    }
    return DispatchPlan(config.runner_workflow or default_workflow, config.runner_ref or default_branch, device, key,
                        inputs, note)


def dispatch(gh: GitHub, repo: str, plan: DispatchPlan) -> None:
    gh.dispatch_workflow(repo, plan.workflow, plan.ref, plan.inputs)


def job_key_from_run(display_title: str, artifact_names: list[str], known_keys: set[str]) -> str | None:
    """Which dispatched job a completed runner run belongs to: its title or an artifact name
    carries the job id (`run-name: pt2-triage ${{ inputs.job-id }}`, artifact `pt2-triage-<job-id>`)."""
    for text in [display_title, *artifact_names]:
        for key in known_keys:
            if key and key in (text or ""):
                return key
    return None
