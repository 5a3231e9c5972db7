"""The sandbox with real processes: every hostile script gets a clear status and nothing escapes."""
from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from runners.sandbox import TERM_GRACE_S, RunResult, RunSpec, build_env, run


def test_exit_code_and_output():
    result = run(RunSpec(script="import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)"))
    assert (result.status, result.exit_code, result.signal) == ("failed", 3, None)
    assert (result.stdout, result.stderr) == ("out\n", "err\n")


def test_python_exception_gives_a_traceback_and_exit_1():
    result = run(RunSpec(script="raise ValueError('boom')"))
    assert result.exit_code == 1
    assert result.stderr.rstrip().endswith("ValueError: boom")


def test_segfault_reports_sigsegv():
    result = run(RunSpec(script="import ctypes\nctypes.string_at(0)", env={"PYTHONFAULTHANDLER": "1"}))
    assert (result.status, result.signal, result.exit_code) == ("crashed", "SIGSEGV", None)
    assert "Fatal Python error: Segmentation fault" in result.stderr


def test_sleep_forever_times_out_and_the_group_is_killed():
    started = time.monotonic()
    result = run(RunSpec(script="import time\ntime.sleep(1000)", timeout_s=1.5))
    assert result.status == "timeout" and result.limits_fired == ("timeout",)
    assert (result.exit_code, result.signal) == (None, None)  # our kill is not the script's crash
    assert 1.5 <= result.duration_s < 1.5 + TERM_GRACE_S + 1 and time.monotonic() - started < 5


def test_printing_a_gigabyte_is_capped_and_does_not_balloon_our_memory():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(RunSpec(script="import sys\nchunk = 'x' * (1 << 20) + '\\n'\nfor _ in range(1024):\n    sys.stdout.write(chunk)",
                         output_cap_bytes=1 << 20, timeout_s=120))
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert len(result.stdout) < (1 << 20) + 200
    assert "bytes dropped ...]" in result.stdout
    assert result.stdout_dropped_bytes > 30 << 20
    assert "output" in result.limits_fired  # killed once it passed 64x the cap
    assert grown_kb < 64 * 1024


def test_head_and_tail_are_kept_under_the_cap():
    result = run(RunSpec(script="for i in range(100000):\n    print(f'line {i}')", output_cap_bytes=4096))
    assert result.stdout.startswith("line 0\n") and result.stdout.rstrip().endswith("line 99999")
    assert result.stdout_dropped_bytes > 0 and result.limits_fired == ()


def test_unbounded_allocation_hits_the_address_space_limit():
    result = run(RunSpec(script="blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))",
                         address_space_bytes=1 << 30, timeout_s=60))
    assert result.status == "limit" and "address_space" in result.limits_fired
    assert "MemoryError" in result.stderr


def test_busy_loop_hits_the_cpu_limit():
    result = run(RunSpec(script="while True:\n    pass", cpu_time_s=1, timeout_s=30))
    assert (result.status, result.signal, result.limits_fired) == ("limit", "SIGXCPU", ("cpu_time",))


def _sleepers() -> list[str]:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if line.startswith("sleep 987")]


ESCAPING_CHILDREN = ("import os, subprocess\n"
                     "if os.fork() == 0:\n"
                     "    os.setsid()\n"  # escape the process group, like a daemon
                     "    subprocess.Popen(['sleep', '987'])\n"
                     "    os._exit(0)\n"
                     "subprocess.Popen(['sleep', '987'])\n"
                     "print('parent exits', flush=True)\n")


@pytest.mark.parametrize("isolate", [True, False])
def test_children_that_outlive_the_script_are_killed(isolate):
    result = run(RunSpec(script=ESCAPING_CHILDREN, isolate_network=isolate))
    assert result.stdout == "parent exits\n"
    assert _sleepers() == []


@pytest.mark.parametrize("isolate", [True, False])
def test_children_of_a_timed_out_script_are_killed(isolate):
    result = run(RunSpec(script=ESCAPING_CHILDREN + "import time\ntime.sleep(1000)\n", isolate_network=isolate,
                         timeout_s=1))
    assert result.status == "timeout" and result.stdout == "parent exits\n"
    assert _sleepers() == []


def test_tokens_in_our_environment_never_reach_the_script(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_do_not_leak")
    monkeypatch.setenv("PT2_TRIAGE_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws")
    result = run(RunSpec(script="import os\nprint(sorted(os.environ))\nprint(open('/proc/self/environ').read())"))
    assert "ghp_do_not_leak" not in result.stdout and "s3cret" not in result.stdout
    assert "GITHUB_TOKEN" not in result.stdout and "AWS_SECRET_ACCESS_KEY" not in result.stdout
    assert "GITHUB_TOKEN" not in result.env_used


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "MY_API_KEY", "db_password", "ACTIONS_RUNTIME_TOKEN", "RUNNER_TEMP"])
def test_passing_a_secret_explicitly_is_a_caller_bug(name, tmp_path):
    with pytest.raises(ValueError, match=name):
        build_env({name: "x"}, tmp_path)


def test_a_secret_in_the_spec_is_refused_before_anything_runs(tmp_path):
    workdir = tmp_path / "run"
    with pytest.raises(ValueError, match="GITHUB_TOKEN"):
        run(RunSpec(script="open('ran', 'w')", env={"TORCH_LOGS": "+dynamo", "GITHUB_TOKEN": "x"}, workdir=str(workdir)))
    assert not workdir.exists()


def test_diagnostics_pass_and_caches_stay_in_the_workdir(tmp_path):
    env = build_env({"TORCH_LOGS": "graph_breaks"}, tmp_path, parent={"CUDA_VISIBLE_DEVICES": "0", "HOME": "/root"})
    assert env["TORCH_LOGS"] == "graph_breaks" and env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["HOME"] == str(tmp_path) and env["TORCHINDUCTOR_CACHE_DIR"].startswith(str(tmp_path))


def test_no_network_not_even_loopback():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    script = (f"import socket\ns = socket.socket()\ns.settimeout(3)\ns.connect(('127.0.0.1', {port}))\nprint('connected')")
    result = run(RunSpec(script=script, timeout_s=20))
    server.close()
    assert result.network_isolated and "no network" in result.network_note
    assert result.exit_code == 1 and "connected" not in result.stdout and accepted == []
    assert result.uncaught_exception["type"] == "builtins.ConnectionRefusedError"  # its own loopback, empty


def test_workdir_is_fresh_and_removed_unless_kept(tmp_path, monkeypatch):
    script = "import os, tempfile\nprint(os.getcwd())\nprint(sorted(os.listdir()))\nprint(tempfile.gettempdir())\nopen('left.txt', 'w')"
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))  # where fresh workdirs go, for this test only
    first = run(RunSpec(script=script))
    workdir, listing, tmp = first.stdout.splitlines()
    assert (workdir, listing, tmp) == ("/sandbox", "['repro.py']", "/tmp")  # no host path shows inside
    assert list(private.iterdir()) == [] and first.workdir is None
    assert first.env_used["HOME"] == "/tmp/home" and first.env_used["TORCHINDUCTOR_CACHE_DIR"] == "/sandbox/inductor_cache"
    kept = run(RunSpec(script=script, keep_workdir=True))
    assert os.path.exists(os.path.join(kept.workdir, "left.txt"))
    shutil.rmtree(kept.workdir)
    given = run(RunSpec(script=script, workdir=str(tmp_path / "given")))
    assert given.workdir == str(tmp_path / "given") and (tmp_path / "given" / "left.txt").exists()


def test_extra_files_stay_inside_the_workdir():
    result = run(RunSpec(argv=("cat", "data/input.txt"), files={"data/input.txt": "hello"}))
    assert result.stdout == "hello"
    with pytest.raises(ValueError, match="outside the workdir"):
        run(RunSpec(script="pass", files={"../escape.txt": "x"}))


def test_missing_program_is_exit_127():
    result = run(RunSpec(argv=("definitely-not-a-program-xyz",)))
    assert result.exit_code == 127 and "cannot run" in result.stderr


def test_result_round_trips_through_json():
    result = run(RunSpec(script="x = bytearray(200 << 20)\nprint(1)"))
    assert RunResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert result.to_dict()["status"] == "ok" and result.warm is False
    assert result.peak_rss_bytes > 200 << 20  # the target's own peak, not the launcher's


# --- bubblewrap, and without it ------------------------------------------------------------------------
def test_without_bubblewrap_runs_are_refused_with_the_fix(monkeypatch, tmp_path):
    from runners import bwrap, sandbox
    missing = sandbox.Bubblewrap(None, None, False, f"bubblewrap (bwrap) is not installed; {sandbox.BWRAP_FIX}")
    monkeypatch.setattr(bwrap, "bubblewrap", lambda: missing)  # where every caller looks it up
    workdir = tmp_path / "run"
    with pytest.raises(sandbox.SandboxUnavailable, match=r"apt-get install bubblewrap\) or pass --unsafe-no-sandbox"):
        run(RunSpec(script="open('ran', 'w')", workdir=str(workdir)))
    assert not workdir.exists()


def test_unsafe_mode_runs_without_bubblewrap_and_says_so(monkeypatch):
    from runners import bwrap
    monkeypatch.setattr(bwrap, "bubblewrap", lambda: bwrap.Bubblewrap(None, None, False, "not installed"))
    result = run(RunSpec(script="import os\nprint(os.getcwd() != '/sandbox')\nraise KeyError('x')",
                         unsafe_no_sandbox=True))
    assert result.sandbox.startswith("none (unsafe)") and result.stdout == "True\n"
    assert result.uncaught_exception["type"] == "builtins.KeyError"


def test_the_run_starts_in_cwd_and_files_replace_planted_symlinks(tmp_path):
    workdir = tmp_path / "work"
    (workdir / "sub").mkdir(parents=True)
    (tmp_path / "target").write_text("untouched")
    os.symlink(tmp_path / "target", workdir / "input.txt")  # left by an earlier run in this workdir
    result = run(RunSpec(argv=("sh", "-c", "pwd; cat ../input.txt"), workdir=str(workdir), cwd="sub",
                         files={"input.txt": "ours"}))
    assert result.stdout == "/sandbox/sub\nours"
    assert (tmp_path / "target").read_text() == "untouched"
    with pytest.raises(ValueError, match="outside the workdir"):
        run(RunSpec(argv=("true",), cwd="../.."))


def test_gpu_runs_bind_the_nvidia_devices_and_cpu_runs_do_not(monkeypatch):
    from runners import bwrap, sandbox
    monkeypatch.setattr(bwrap.glob, "glob", lambda pattern: ["/dev/nvidia0", "/dev/nvidiactl"] if pattern == sandbox.GPU_DEVICES else [])
    spec = RunSpec(script="pass", gpu=True)
    prepared = sandbox.prepare(spec)
    try:
        argv, _ = sandbox.sandbox_command(spec, prepared, ["true"], seccomp_fd=9)
        cpu_argv, _ = sandbox.sandbox_command(RunSpec(script="pass"), prepared, ["true"], seccomp_fd=9)
    finally:
        prepared.cleanup(spec)
    assert "/dev/nvidia0" in argv and argv[argv.index("/dev/nvidia0") - 1] == "--dev-bind"
    assert "/dev/nvidia0" not in cpu_argv and "--disable-userns" in argv


def test_the_caches_of_a_job_are_shared_and_nothing_else(tmp_path):
    cache = tmp_path / "job-cache"
    script = "import os\nprint(os.environ['TORCHINDUCTOR_CACHE_DIR'])\nprint(sorted(os.listdir('/cache')))\nopen('/cache/x', 'w')"
    first, second = run(RunSpec(script=script, cache_dir=str(cache))), run(RunSpec(script=script, cache_dir=str(cache)))
    assert first.stdout == "/cache/inductor_cache\n['inductor_tmp']\n"
    assert second.stdout == "/cache/inductor_cache\n['inductor_tmp', 'x']\n"


LINK_NOT_MOUNT = ("import os\nlink = '/tmp/torchinductor_nobody'\n"
                  "mounted = [line.split()[4] for line in open('/proc/self/mountinfo')]\n"
                  "open(link + '/pch', 'w')\nprint(os.readlink(link), link in mounted, os.listdir('/cache/inductor_tmp'))\n")


def test_inductors_default_dir_is_a_link_into_the_job_cache_never_a_mount_of_a_path_in_it(tmp_path):
    """The runs sharing a cache can write in it: a bind of `<cache>/inductor_tmp` by path let one swap
    it for a symlink between our check and bubblewrap's mount, and the next run got the host's / there."""
    result = run(RunSpec(script=LINK_NOT_MOUNT, cache_dir=str(tmp_path / "job-cache")))
    assert result.stdout == "/cache/inductor_tmp False ['pch']\n", result.stderr
