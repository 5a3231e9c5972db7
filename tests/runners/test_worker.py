"""The warm worker gives what a cold run gives, faster, under the same rules."""
from __future__ import annotations

import pytest

from runners.sandbox import RunSpec, run
from runners.worker import WarmWorker

pytestmark = pytest.mark.slow

COMPILE = "import torch\nf = torch.compile(lambda x: x + 1, backend='eager')\nprint(f(torch.ones(2)))\n"


@pytest.fixture(scope="module")
def worker():
    with WarmWorker() as warm:
        yield warm


def test_warm_run_prints_what_a_cold_run_prints(worker):
    warm, cold = worker.run(RunSpec(script=COMPILE)), run(RunSpec(script=COMPILE))
    assert warm.warm and not cold.warm
    assert warm.stdout == cold.stdout == "tensor([2., 2.])\n"
    assert warm.status == cold.status == "ok"


def test_every_run_starts_with_fresh_dynamo_state(worker):
    script = ("import torch\nfrom torch._dynamo.utils import counters\n"
              "assert not counters['stats'], dict(counters)\n"
              "torch.compile(lambda x: x * 2, backend='eager')(torch.ones(1))\n"
              "print(sum(counters['stats'].values()) > 0)\n")
    first, second = worker.run(RunSpec(script=script)), worker.run(RunSpec(script=script))
    assert first.stdout == second.stdout == "True\n", first.stderr + second.stderr


def test_exception_gives_exit_1_and_the_interpreter_traceback(worker):
    result = worker.run(RunSpec(script="def f():\n    raise KeyError('boom')\nf()\n"))
    assert (result.exit_code, result.warm) == (1, True)
    assert result.stderr.rstrip().endswith("KeyError: 'boom'") and "in f" in result.stderr


def test_sys_exit_code_is_kept(worker):
    assert worker.run(RunSpec(script="import sys\nsys.exit(7)")).exit_code == 7


def test_segfault_in_a_warm_child(worker):
    result = worker.run(RunSpec(script="import ctypes\nctypes.string_at(0)", env={"PYTHONFAULTHANDLER": "1"}))
    assert (result.status, result.signal, result.warm) == ("crashed", "SIGSEGV", True)
    assert "Fatal Python error: Segmentation fault" in result.stderr


def test_timeout_kills_and_the_worker_keeps_serving(worker):
    result = worker.run(RunSpec(script="import time\ntime.sleep(1000)", timeout_s=1.5))
    assert result.status == "timeout" and result.warm
    assert worker.run(RunSpec(script="print('next')")).stdout == "next\n"


def test_no_token_and_no_network_when_warm(worker, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_leak")
    result = worker.run(RunSpec(script="import os, socket\nprint(os.environ.get('GITHUB_TOKEN'))\n"
                                       "socket.create_connection(('127.0.0.1', 9), timeout=2)"))
    assert result.stdout == "None\n" and result.exit_code == 1
    assert result.network_isolated == worker.network_isolated


def test_import_time_env_falls_back_to_a_cold_run(worker):
    result = worker.run(RunSpec(script="import os\nprint(os.environ['TORCH_LOGS'])", env={"TORCH_LOGS": "graph_breaks"}))
    assert (result.warm, result.stdout) == (False, "graph_breaks\n")


def test_cuda_runs_are_always_cold(worker):
    assert worker.run(RunSpec(script="print(1)"), cuda=True).warm is False


def test_a_dead_server_is_restarted_once():
    with WarmWorker(preload=()) as warm:
        warm.proc.kill()
        warm.proc.wait()
        result = warm.run(RunSpec(script="print('alive')"))
        assert (result.stdout, result.warm, warm.restarts) == ("alive\n", True, 1)
