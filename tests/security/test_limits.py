"""Taking the machine down: fork bombs, huge files, filling /tmp or /dev/shm (RAM), writing outside
the workdir. Per-run caps hold; the whole run's memory is capped only where a cgroup v2 is delegated."""
from __future__ import annotations

import os
import shutil
import subprocess

from runners import cgroups
from runners.sandbox import MiB, RunSpec

FORK_BOMB = """
import os
children = 0
try:
    while True:
        if os.fork() == 0:
            os.execv('/bin/sleep', ['sleep', '983'])
        children += 1
except OSError as exc:
    print('stopped after', children, exc.strerror)
"""


def test_a_fork_bomb_stops_at_the_process_limit(runner):
    result = runner(RunSpec(script=FORK_BOMB, max_processes=64, timeout_s=60))
    assert result.stdout.startswith("stopped after"), result.stdout + result.stderr
    assert int(result.stdout.split()[2]) < 64
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 983" not in listing  # every child died with the run


def test_a_huge_file_stops_at_the_file_size_limit(runner):
    script = "with open('big', 'wb') as f:\n    for _ in range(64):\n        f.write(b'x' * (1 << 20))\n"
    result = runner(RunSpec(script=script, max_file_bytes=8 * MiB))
    assert result.status == "limit" and result.limits_fired == ("file_size",), result


def test_tmp_and_shm_are_small_private_tmpfs(runner):
    script = ("import os\nfor path in ('/tmp/fill', '/dev/shm/fill'):\n    try:\n"
              "        with open(path, 'wb') as f:\n            for _ in range(64):\n                f.write(b'x' * (1 << 20))\n"
              "        print(path, 'filled')\n    except OSError as exc:\n        print(path, exc.strerror)\n")
    result = runner(RunSpec(script=script, tmp_bytes=16 * MiB))
    assert result.stdout == "/tmp/fill No space left on device\n/dev/shm/fill No space left on device\n", result.stderr


WRITE_OUTSIDE = """
import os
for directory in ('/', '/var/tmp', '/dev', '/usr', '/etc', '/run', '/home', '/root', '/.pt2', '/sys'):
    try:
        with open(os.path.join(directory, 'pt2-fill'), 'wb') as f:
            for _ in range(512):
                f.write(b'x' * (1 << 20))
        print(directory, 'written')
    except OSError as exc:
        print(directory, exc.strerror)
"""


def test_nothing_can_be_written_outside_the_workdir_and_tmp(runner):
    before = shutil.disk_usage("/tmp").used
    result = runner(RunSpec(script=WRITE_OUTSIDE))
    assert result.status == "ok" and "written" not in result.stdout, result.stdout
    assert not any(os.path.exists(os.path.join(d, "pt2-fill")) for d in ("/", "/var/tmp", "/tmp", "/root"))
    assert shutil.disk_usage("/tmp").used - before < 256 * MiB


def test_the_result_says_which_limits_applied(runner):
    result = runner(RunSpec(script="print(1)"))
    parent, note = cgroups.available()
    if parent is None and not result.warm:
        assert result.limits_mechanism == "rlimit", note  # memory is then capped per process only (RLIMIT_AS)
    assert result.limits_mechanism
