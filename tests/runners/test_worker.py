"""The warm worker gives what a cold run gives, faster, under the same rules.

Tests that need torch share one torch-preloaded worker (marked slow); the rules themselves
(limits, cleanup, isolation, fallback) are checked on a worker that preloads nothing.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import runners
from runners._worker_preload import read_warm_imports
from runners.sandbox import RunSpec, run
from runners.worker import WarmWorker, warm_safe_env

COMPILE = "import torch\nf = torch.compile(lambda x: x + 1, backend='eager')\nprint(f(torch.ones(2)))\n"


@pytest.fixture(scope="module")
def worker():
    with WarmWorker() as warm:
        yield warm


@pytest.fixture(scope="module")
def bare():
    with WarmWorker(preload=()) as warm:
        yield warm


def _same_paths(text: str) -> str:
    return re.sub(r"/tmp/pt2-sandbox-[^/]+/", "WORKDIR/", text)


# --- with torch -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_warm_run_prints_what_a_cold_run_prints(worker):
    warm, cold = worker.run(RunSpec(script=COMPILE)), run(RunSpec(script=COMPILE))
    assert warm.warm and not cold.warm
    assert warm.stdout == cold.stdout == "tensor([2., 2.])\n"
    assert warm.status == cold.status == "ok"
    assert warm.duration_s < cold.duration_s


@pytest.mark.slow
def test_every_run_starts_with_fresh_dynamo_state(worker):
    script = ("import torch\nfrom torch._dynamo.utils import counters\n"
              "assert not counters['stats'], dict(counters)\n"
              "torch.compile(lambda x: x * 2, backend='eager')(torch.ones(1))\n"
              "print(sum(counters['stats'].values()) > 0)\n")
    first, second = worker.run(RunSpec(script=script)), worker.run(RunSpec(script=script))
    assert first.stdout == second.stdout == "True\n", first.stderr + second.stderr


@pytest.mark.slow
def test_a_runs_own_exit_callbacks_run_as_under_python_and_the_preloads_finalizers_do_not(worker):
    script = ("import atexit, weakref\nimport torch\n"
              "class Box: pass\nbox = Box()\n"
              "weakref.finalize(box, print, 'own finalizer')\natexit.register(print, 'own atexit')\n"
              "print(sum(1 for f in weakref.finalize._registry if f.atexit))\n")
    warm, cold = worker.run(RunSpec(script=script)), run(RunSpec(script=script))
    warm_count, *warm_exit = warm.stdout.splitlines()
    cold_count, *cold_exit = cold.stdout.splitlines()
    assert warm_exit == cold_exit == ["own atexit", "own finalizer"], warm.stderr + cold.stderr
    assert warm_count == "1" and int(cold_count) > 1  # torch's own deregistrations are skipped warm


@pytest.mark.slow
def test_a_warm_run_starts_with_what_torch_imports_lazily_already_imported(worker):
    listed = read_warm_imports(Path(runners.__file__).parent)
    script = f"import sys\nprint(sorted(set({list(listed)!r}) - set(sys.modules)))\n"
    assert len(listed) > 50
    assert worker.run(RunSpec(script=script)).stdout == "[]\n"  # every name this torch has


@pytest.mark.slow
def test_caches_live_in_the_runs_own_workdir(worker):
    script = "import os\nfrom torch._inductor.runtime.cache_dir_utils import cache_dir\nprint(cache_dir().startswith(os.getcwd()))"
    assert worker.run(RunSpec(script=script)).stdout == "True\n"


ISA_ANSWERS = ("from torch._inductor import cpu_vec_isa\n"
               "known = cpu_vec_isa.VecISA._VecISA__bool__impl.cache_info().currsize\n"
               "print(known > 0, [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()], cpu_vec_isa.pick_vec_isa())\n")


@pytest.mark.slow
def test_warm_runs_inherit_the_machines_vector_isas_and_they_are_what_a_cold_run_finds(worker):
    """The server asks once which vector ISAs build and load (g++ and a dlopen per ISA, ~1.1 s of
    every run that reaches Inductor's code cache); a fork inherits the answers, a cold run asks."""
    warm, cold = worker.run(RunSpec(script=ISA_ANSWERS)), run(RunSpec(script=ISA_ANSWERS))
    assert warm.stdout.startswith("True ") and cold.stdout.startswith("False "), warm.stderr + cold.stderr
    assert warm.stdout.split(" ", 1)[1] == cold.stdout.split(" ", 1)[1]


CPP_COMPILE_ERROR = """\
import os
import torch
import torch._inductor.config as config
from torch._inductor.runtime.cache_dir_utils import cache_dir
config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"
print(os.path.isdir(os.path.join(cache_dir(), "pt2-triage-failed-compiles")), flush=True)
torch.compile(lambda x: torch.relu(x) * 2)(torch.randn(8))
"""


@pytest.mark.slow
def test_a_failed_cpp_build_fails_again_the_same_way_in_the_jobs_next_run(worker, tmp_path):
    job = str(tmp_path / "job")
    first, second = (worker.run(RunSpec(script=CPP_COMPILE_ERROR, cache_dir=job)) for _ in range(2))
    assert first.stdout == "False\n" and second.stdout == "True\n"  # the first run left the memo behind
    for result in (first, second):
        assert result.uncaught_exception["type"] == "torch._inductor.exc.InductorError"
        assert "CppCompileError: C++ compile error" in result.uncaught_exception["message"]
    assert first.uncaught_exception["message"] == second.uncaught_exception["message"]


@pytest.mark.slow
def test_segfault_in_a_warm_child(worker):
    result = worker.run(RunSpec(script="import ctypes\nctypes.string_at(0)", env={"PYTHONFAULTHANDLER": "1"}))
    assert (result.status, result.signal, result.warm) == ("crashed", "SIGSEGV", True)
    assert "Fatal Python error: Segmentation fault" in result.stderr


@pytest.mark.slow
def test_import_time_env_falls_back_to_a_cold_run(worker):
    result = worker.run(RunSpec(script="import os\nprint(os.environ['TORCH_LOGS'])", env={"TORCH_LOGS": "graph_breaks"}))
    assert (result.warm, result.stdout) == (False, "graph_breaks\n")


@pytest.mark.slow
def test_cuda_runs_are_always_cold(worker):
    assert worker.run(RunSpec(script="print(1)"), cuda=True).warm is False


# --- the rules, without torch ---------------------------------------------------------------------------
def test_exception_gives_exit_1_and_the_same_traceback_as_python(bare):
    script = "def f():\n    raise KeyError('boom')\nf()\n"
    warm, cold = bare.run(RunSpec(script=script)), run(RunSpec(script=script))
    assert (warm.exit_code, warm.warm) == (1, True)
    assert _same_paths(warm.stderr) == _same_paths(cold.stderr)
    assert warm.stderr.startswith("Traceback (most recent call last):\n") and "in f" in warm.stderr


@pytest.mark.parametrize("script, code", [("import sys\nsys.exit(7)", 7), ("raise SystemExit('bye')", 1),
                                          ("raise SystemExit", 0), ("def (", 1)])
def test_exit_status_and_stderr_match_python(bare, script, code):
    warm, cold = bare.run(RunSpec(script=script)), run(RunSpec(script=script))
    assert warm.warm and warm.exit_code == cold.exit_code == code
    assert _same_paths(warm.stderr) == _same_paths(cold.stderr)


def test_main_module_argv_and_path_match_python(bare):
    script = ("import os, sys, __main__\nprint(sys.argv, __name__, __file__ == os.path.abspath('repro.py'))\n"
              "print(sys.path[0] == os.getcwd(), __main__.__dict__ is globals(), os.getpid() > 1)\n")
    warm, cold = bare.run(RunSpec(script=script)), run(RunSpec(script=script))
    assert warm.stdout == cold.stdout == "['repro.py'] __main__ True\nTrue True True\n"


def test_timeout_kills_and_the_worker_keeps_serving(bare):
    result = bare.run(RunSpec(script="import time\ntime.sleep(1000)", timeout_s=1))
    assert (result.status, result.signal, result.warm) == ("timeout", None, True)
    assert 1 <= result.duration_s < 3
    assert bare.run(RunSpec(script="print('next')")).stdout == "next\n"


def test_output_is_capped_and_a_flood_is_stopped(bare):
    result = bare.run(RunSpec(script="import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
                              output_cap_bytes=1 << 20))
    assert result.limits_fired == ("output",) and result.warm
    assert len(result.stdout) < (1 << 20) + 100 and result.stdout_dropped_bytes > 60 << 20


def test_limits_apply_to_warm_runs(bare):
    memory = bare.run(RunSpec(script="b = []\nwhile True:\n    b.append(bytearray(64 << 20))", address_space_bytes=1 << 30))
    assert memory.limits_fired == ("address_space",) and "MemoryError" in memory.stderr
    cpu = bare.run(RunSpec(script="while True:\n    pass", cpu_time_s=1))
    assert (cpu.status, cpu.signal, cpu.limits_fired) == ("limit", "SIGXCPU", ("cpu_time",))


def test_children_that_outlive_a_warm_run_are_killed(bare):
    script = ("import os, subprocess\n"
              "if os.fork() == 0:\n    os.setsid()\n    subprocess.Popen(['sleep', '986'])\n    os._exit(0)\n"
              "subprocess.Popen(['sleep', '986'])\nprint('parent exits')\n")
    assert bare.run(RunSpec(script=script)).stdout == "parent exits\n"
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 986" not in listing


def test_no_token_and_no_network_when_warm(bare, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_leak")
    result = bare.run(RunSpec(script="import os, socket\nprint(os.environ.get('GITHUB_TOKEN'))\n"
                                     "socket.create_connection(('127.0.0.1', 9), timeout=2)"))
    assert result.stdout == "None\n" and result.exit_code == 1 and result.warm
    assert result.network_isolated == bare.network_isolated
    with pytest.raises(ValueError, match="GITHUB_TOKEN"):
        bare.run(RunSpec(script="pass", env={"GITHUB_TOKEN": "x"}))


def test_which_env_can_run_warm():
    assert warm_safe_env({}) and warm_safe_env({"PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"})
    assert not warm_safe_env({"TORCH_LOGS": "+dynamo"}) and not warm_safe_env({"TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
    assert not warm_safe_env({"PYTHONUNBUFFERED": "0"})


def test_commands_run_cold(bare):
    assert bare.run(RunSpec(argv=("echo", "hi"))).warm is False


def test_a_dead_server_is_restarted_once_then_runs_go_cold():
    with WarmWorker(preload=()) as warm:
        warm._proc.kill()
        warm._proc.wait()
        result = warm.run(RunSpec(script="print('alive')"))
        assert (result.stdout, result.warm, warm.restarts) == ("alive\n", True, 1)
        warm._proc.kill()
        warm._proc.wait()
        result = warm.run(RunSpec(script="print('cold')"))
        assert (result.stdout, result.warm, warm.restarts) == ("cold\n", False, 1)


def test_a_jobs_cache_is_shared_by_its_warm_runs_and_hidden_from_other_jobs(bare, tmp_path):
    script = ("import glob, os\nprint(sorted(os.listdir('/cache')), glob.glob('/tmp/torchinductor_*/*'))\n"
              "n = os.environ['OMP_NUM_THREADS']\nopen('/cache/' + n, 'w')\n"
              "open(glob.glob('/tmp/torchinductor_*')[0] + '/pch' + n, 'w')\n")
    job_a, job_b = str(tmp_path / "a"), str(tmp_path / "b")
    outputs = [bare.run(RunSpec(script=script, cache_dir=job, env={"OMP_NUM_THREADS": n})).stdout
               for job, n in ((job_a, "1"), (job_a, "2"), (job_b, "3"))]
    assert outputs == ["['inductor_tmp'] []\n", "['1', 'inductor_tmp'] ['/tmp/torchinductor_nobody/pch1']\n",
                       "['inductor_tmp'] []\n"]
    no_job = bare.run(RunSpec(script="open('/cache/x', 'w')"))  # the server's scratch dir is not a channel
    assert no_job.uncaught_exception["type"] == "builtins.OSError" and "Read-only" in no_job.uncaught_exception["message"]


def test_a_warm_runs_inductor_default_dir_is_a_link_into_the_job_cache_never_a_mount(bare, tmp_path):
    """As for a cold run (test_sandbox.py): the server mounted `<job cache>/inductor_tmp` by path, and a
    run of the job could swap it for a symlink to the pool's caches root before the next run's mount."""
    from tests.runners.test_sandbox import LINK_NOT_MOUNT

    result = bare.run(RunSpec(script=LINK_NOT_MOUNT, cache_dir=str(tmp_path / "job")))
    assert result.stdout == "/cache/inductor_tmp False ['pch']\n", result.stderr


def test_an_interpreter_under_the_hosts_tmp_still_imports_in_warm_runs(tmp_path):
    """A venv under /tmp (a CI clone there, `python -m venv /tmp/x`) is bound into the sandbox, and
    each warm run's fresh /tmp must not hide it: an import after the preload would fail."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site_packages = next(venv.glob("lib/python*/site-packages"))
    (site_packages / "late_module.py").write_text("VALUE = 42\n")
    python = str(venv / "bin" / "python")
    with WarmWorker(preload=(), python=python) as warm:
        result = warm.run(RunSpec(script="import late_module\nprint(late_module.VALUE)\n", python=python))
    assert result.warm and result.stdout == "42\n", result.stderr


@pytest.mark.slow
def test_a_server_starts_warm_when_the_isa_probes_it_copies_are_larger_than_its_base_scratch(tmp_path, monkeypatch):
    """An H200 host's probes did not fit the server's fixed 1 MiB cache, and every run went cold."""
    from runners import inductor_seed

    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "large_probe.so").write_bytes(b"\0" * (3 << 20))
    for path in (tmp_path, tmp_path / "zz"):
        path.chmod(0o755)  # as the store is: readable by the sandbox's uid
    monkeypatch.setattr(inductor_seed, "seed_dir", lambda python: tmp_path)
    with WarmWorker() as warm:
        result = warm.run(RunSpec(script="print('warm')\n"))
    assert result.warm and result.stdout == "warm\n", result.stderr


@pytest.mark.slow
def test_without_the_warm_imports_list_the_server_starts_and_runs_import_for_themselves(monkeypatch):
    from runners import worker_launch

    monkeypatch.setattr(worker_launch, "OPTIONAL_SERVER_FILES", ("_no_such_list.txt",))
    with WarmWorker() as warm:
        result = warm.run(RunSpec(script="import sys\nprint('torch.export._trace' in sys.modules)\n"))
    assert result.warm and result.stdout == "False\n", result.stderr


def test_a_kept_warm_workdir_outlives_the_worker(tmp_path):
    with WarmWorker(preload=()) as warm:
        result = warm.run(RunSpec(script="open('left.txt', 'w').write('x')", keep_workdir=True))
    try:
        assert result.warm and open(f"{result.workdir}/left.txt").read() == "x"
    finally:
        import shutil
        shutil.rmtree(result.workdir)


def test_a_server_that_could_not_clean_up_is_replaced_not_reused(monkeypatch):
    with WarmWorker(preload=()) as warm:
        first_server = warm._proc.pid
        real = warm._execute
        monkeypatch.setattr(warm, "_execute", lambda spec, prepared: (real(spec, prepared)[0], False))
        assert warm.run(RunSpec(script="print(1)")).stdout == "1\n"
        monkeypatch.setattr(warm, "_execute", real)
        result = warm.run(RunSpec(script="print(2)"))
        assert (result.stdout, result.warm, warm.replacements, warm.restarts) == ("2\n", True, 1, 0)
        assert warm._proc.pid != first_server


def test_a_worker_started_by_a_thread_that_ended_keeps_serving():
    """The CLI starts its pool in a background thread; a parent-death signal tied to that thread
    would kill the server as soon as the thread is done."""
    import threading
    warm = WarmWorker(preload=())
    starter = threading.Thread(target=warm.start)
    starter.start()
    starter.join()
    try:
        import time
        time.sleep(0.3)
        result = warm.run(RunSpec(script="print('still here')"))
        assert (result.stdout, result.warm, warm.restarts) == ("still here\n", True, 0)
    finally:
        warm.close()


def test_an_unsafe_worker_serves_unsafe_specs_only():
    with WarmWorker(preload=(), unsafe_no_sandbox=True) as warm:
        unsafe = warm.run(RunSpec(script="raise KeyError('k')", unsafe_no_sandbox=True))
        assert unsafe.warm and unsafe.sandbox.startswith("none (unsafe)")
        assert unsafe.uncaught_exception["type"] == "builtins.KeyError"
        sandboxed = warm.run(RunSpec(script="import os\nprint(os.getcwd())"))
        assert (sandboxed.warm, sandboxed.stdout) == (False, "/sandbox\n")  # a sandboxed spec runs cold, sandboxed


def test_gpu_runs_go_cold_at_once_without_starting_or_holding_the_warm_pool(monkeypatch):
    """A GPU run is never warm (the warm server has no device nodes): it must neither wait for the
    pool nor take one of its workers, so a ladder's GPU rungs run side by side."""
    from contextlib import ExitStack

    from runners import pool as pool_module

    ran = []
    monkeypatch.setattr(pool_module.sandbox, "run", lambda spec: ran.append(spec) or "cold result")
    with ExitStack() as stack:
        runner = pool_module.lazy_runner(stack, 2)
        assert runner(RunSpec(script="import torch\n", gpu=True)) == "cold result"
        assert ran and ran[0].gpu and not getattr(runner.prewarm, "thread", None)


class _FakeWorker:
    """A WarmWorker stand-in whose start waits for its gate (None: starts at once; an exception: fails)."""

    gates: list = []

    def __init__(self, **options):
        self.gate = _FakeWorker.gates.pop(0)
        self.started = self.closed = False

    def start(self):
        if isinstance(self.gate, Exception):
            raise self.gate
        if self.gate is not None:
            self.gate.wait(10)
        self.started = True

    def run(self, spec, cuda=False):
        return self

    def close(self):
        self.closed = True


def test_a_pool_serves_runs_as_soon_as_its_first_worker_is_ready_and_the_others_join_when_ready(monkeypatch):
    import threading

    from runners import pool as pool_module

    slow = threading.Event()
    monkeypatch.setattr(pool_module, "WarmWorker", _FakeWorker)
    monkeypatch.setattr(_FakeWorker, "gates", [slow, None])
    with pool_module.WarmPool(2) as pool:
        first = pool.run(RunSpec(script="pass"))
        assert first is pool.workers[1] and not pool.workers[0].started  # the slow one is still starting
        slow.set()
        assert {id(pool.run(RunSpec(script="pass"))) for _ in range(4)} <= {id(w) for w in pool.workers}
    assert all(w.started and w.closed for w in pool.workers)  # close waited for the slow start, then closed it


def test_a_pool_starts_with_the_workers_that_start_and_refuses_when_none_does(monkeypatch):
    from runners import pool as pool_module
    from runners.worker import WorkerUnavailable

    monkeypatch.setattr(pool_module, "WarmWorker", _FakeWorker)
    monkeypatch.setattr(_FakeWorker, "gates", [WorkerUnavailable("no bwrap"), None])
    with pool_module.WarmPool(2) as pool:
        assert pool.run(RunSpec(script="pass")) is pool.workers[1]
    monkeypatch.setattr(_FakeWorker, "gates", [WorkerUnavailable("no bwrap"), WorkerUnavailable("no bwrap")])
    with pytest.raises(WorkerUnavailable, match="no bwrap"):
        pool_module.WarmPool(2).__enter__()
