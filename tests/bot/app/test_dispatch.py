"""Dispatch plans as plain values: which device, which repro, which inputs; and which run is whose."""
from __future__ import annotations

import yaml

from bot.app.dispatch import (MAX_REPRO_INPUT_CHARS, choose_device, job_key_from_run, newest_repro, plan_dispatch,
                              run_title)
from bot.app.repo_config import RepoConfig
from bot.app.store import RunnerJob
from bot.core.extract import request_from_text
from bot.core.records import Classification
from tests.paths import ROOT

CPU_REPRO = "```python\nimport torch\nprint(torch.compile(lambda x: x + 1)(torch.ones(2)))\n```\n"
CUDA_REPRO = "```python\nimport torch\nx = torch.ones(2, device='cuda')\nprint(torch.compile(lambda y: y + 1)(x))\n```\n"
VERDICT = Classification(category="graph_break", confidence=0.9, signature="s")


def request(text: str):
    return request_from_text(text, source="issue")


def test_a_plan_sends_the_likeliest_repro_with_the_four_inputs():
    plan = plan_dispatch(12, request(CPU_REPRO), VERDICT, RepoConfig(), "pt2-triage-runner.yml", "main", job_key="k1")
    assert (plan.workflow, plan.ref, plan.device, plan.job_key, plan.note) == ("pt2-triage-runner.yml", "main", "cpu",
                                                                                "k1", "")
    assert plan.inputs == {"issue-number": "12", "repro": request(CPU_REPRO).repro_scripts[0], "device": "cpu",
                           "job-id": "k1"}


def test_the_repo_config_names_the_workflow_and_its_ref():
    config = RepoConfig(runner_workflow="triage.yml", runner_ref="ci-infra")
    plan = plan_dispatch(12, request(CPU_REPRO), VERDICT, config, "pt2-triage-runner.yml", "main")
    assert (plan.workflow, plan.ref) == ("triage.yml", "ci-infra") and len(plan.job_key) == 32


def test_no_repro_no_plan():
    assert plan_dispatch(12, request("It is slow."), VERDICT, RepoConfig(), "w.yml", "main") is None


def test_a_repro_too_long_for_an_input_is_read_from_the_issue_by_the_runner():
    long_repro = "```python\nimport torch\n" + "x = 1\n" * (MAX_REPRO_INPUT_CHARS // 6) + "torch.compile(f)\n```\n"
    assert plan_dispatch(12, request(long_repro), VERDICT, RepoConfig(), "w.yml", "main").inputs["repro"] == ""


def test_the_device_asked_for_wins_then_the_text_then_the_repo_default():
    cpu, cuda = request(CPU_REPRO), request(CUDA_REPRO)
    assert choose_device(cuda, VERDICT, RepoConfig(), requested="cpu") == ("cpu", "")
    assert choose_device(cuda, VERDICT, RepoConfig()) == ("gpu", "")
    assert choose_device(cpu, VERDICT, RepoConfig()) == ("cpu", "")
    assert choose_device(cpu, VERDICT, RepoConfig(default_device="gpu")) == ("gpu", "")
    assert choose_device(cpu, VERDICT, RepoConfig(), gpu_categories=frozenset({"graph_break"})) == ("gpu", "")


def test_a_repo_without_gpu_runners_runs_on_cpu_and_says_so():
    device, note = choose_device(request(CUDA_REPRO), VERDICT, RepoConfig(gpu=False))
    assert device == "cpu" and "runner.gpu: false" in note


def test_the_newest_repro_is_the_one_the_issue_shows_last():
    both = request(CUDA_REPRO + "\nA smaller one:\n\n" + CPU_REPRO)
    assert "device='cuda'" in newest_repro(request(CUDA_REPRO))
    assert "device='cuda'" not in newest_repro(both)
    assert newest_repro(request("no code")) is None
    plan = plan_dispatch(12, both, VERDICT, RepoConfig(), "w.yml", "main", repro=newest_repro(both))
    assert plan.inputs["repro"] == newest_repro(both)


def waiting_job(job_key: str, number: int = 12, device: str = "cpu") -> RunnerJob:
    return RunnerJob(job_key, "octo-org/octo-repo", number, 4242, device, "dispatched", True, "maintainer", 1.0)


def test_a_finished_run_is_its_jobs_run_when_its_title_is_exactly_the_jobs_run_name():
    waiting = [waiting_job("aaa111"), waiting_job("bbb222", 7, "gpu")]
    assert run_title("bbb222", 7, "gpu") == "pt2-triage bbb222 (issue 7, gpu)"
    assert job_key_from_run("pt2-triage bbb222 (issue 7, gpu)", waiting) == "bbb222"
    assert job_key_from_run("pt2-triage aaa111 (issue 12, cpu)", waiting) == "aaa111"


def test_a_title_that_only_mentions_a_job_id_matches_no_job():
    waiting = [waiting_job("aaa111")]
    assert job_key_from_run("docs: mention aaa111", waiting) is None  # a pull request's title
    assert job_key_from_run("pt2-triage aaa111 (issue 12, cpu) again", waiting) is None
    assert job_key_from_run("pt2-triage aaa111 (issue 13, cpu)", waiting) is None  # another issue than the job's
    assert job_key_from_run("pt2-triage runner", waiting) is None
    assert job_key_from_run("pt2-triage aaa111 (issue 12, cpu)", []) is None  # no job waiting


def test_the_run_name_is_the_runner_workflows_run_name_filled_in():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pt2-triage-runner.yml").read_text(encoding="utf-8"))
    filled = workflow["run-name"].replace("${{ inputs.job-id }}", "k1").replace(
        "${{ inputs.issue-number }}", "12").replace("${{ inputs.device }}", "cpu")
    assert filled == run_title("k1", 12, "cpu")
