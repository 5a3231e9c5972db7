"""runners/disk_watch.py: a run that fills the host's disk is stopped, whatever number of files it uses."""
from __future__ import annotations

import pytest

from runners.disk_watch import GiB, MiB, Space, over
from runners.sandbox import RunSpec, run
from runners.worker import WarmWorker

# many files, none near RLIMIT_FSIZE: only the disk watch can stop it (it ends by itself at 512 MiB)
FILL = """
chunk = b"x" * (1 << 20)
for i in range(512):
    with open(f"fill{i}", "wb") as f:
        f.write(chunk)
        f.flush()
    import time; time.sleep(0.005)
print("wrote it all")
"""


def test_a_run_is_over_once_it_took_its_cap_or_a_nearly_full_disk_and_not_for_the_disks_own_state():
    start = Space(free=100 * GiB, total=200 * GiB)
    assert not over(start, Space(99 * GiB, 200 * GiB), cap=2 * GiB)
    assert over(start, Space(97 * GiB, 200 * GiB), cap=2 * GiB)
    nearly_full = Space(free=1 * GiB, total=200 * GiB)
    assert not over(nearly_full, Space(1 * GiB - 10 * MiB, 200 * GiB), cap=2 * GiB)  # it was full before
    assert over(nearly_full, Space(1 * GiB - 300 * MiB, 200 * GiB), cap=2 * GiB)


def test_a_cold_run_writing_past_its_disk_cap_is_killed(tmp_path):
    result = run(RunSpec(script=FILL, max_disk_bytes=64 * MiB, cache_dir=str(tmp_path / "job")))
    assert result.status == "limit" and "disk" in result.limits_fired and "wrote it all" not in result.stdout
    assert result.signal is None  # stopped by us, not a crash of its own


@pytest.mark.slow
def test_a_warm_run_writing_past_its_disk_cap_is_killed_and_the_worker_serves_on(tmp_path):
    with WarmWorker(preload=()) as warm:
        result = warm.run(RunSpec(script=FILL, max_disk_bytes=64 * MiB, cache_dir=str(tmp_path / "job")))
        assert result.warm and "disk" in result.limits_fired and "wrote it all" not in result.stdout
        assert warm.run(RunSpec(script="print('next')")).stdout == "next\n"
