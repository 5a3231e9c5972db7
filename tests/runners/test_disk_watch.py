"""runners/disk_watch.py: a run that fills the host's disk is stopped, whatever number of files it uses."""
from __future__ import annotations

import pytest

from runners.disk_watch import GiB, MiB, Space, held, over
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

# empty files: no bytes to speak of, only inodes (ends by itself after 200,000 of them)
EMPTY_FILES = """
import os
os.mkdir("d")
fd = os.open("d", os.O_RDONLY)
for n in range(200_000):
    os.close(os.open(str(n), os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
print("made them all")
"""


def test_a_run_is_over_once_it_took_its_cap_or_a_nearly_full_disk_and_not_for_the_disks_own_state():
    start = Space(free=100 * GiB, total=200 * GiB)
    assert not over(start, Space(99 * GiB, 200 * GiB), cap=2 * GiB)
    assert over(start, Space(97 * GiB, 200 * GiB), cap=2 * GiB)
    nearly_full = Space(free=1 * GiB, total=200 * GiB)
    assert not over(nearly_full, Space(1 * GiB - 10 * MiB, 200 * GiB), cap=2 * GiB)  # it was full before
    assert over(nearly_full, Space(1 * GiB - 300 * MiB, 200 * GiB), cap=2 * GiB)


def test_a_run_is_over_once_it_took_its_inode_cap_or_a_nearly_exhausted_inode_table():
    start = Space(free=100 * GiB, total=200 * GiB, files_free=10_000_000, files_total=16_000_000)
    assert not over(start, Space(100 * GiB, 200 * GiB, 9_500_000, 16_000_000), cap=2 * GiB, max_files=1_000_000)
    assert over(start, Space(100 * GiB, 200 * GiB, 8_900_000, 16_000_000), cap=2 * GiB, max_files=1_000_000)
    nearly_out = Space(free=100 * GiB, total=200 * GiB, files_free=120_000, files_total=16_000_000)
    assert over(nearly_out, Space(100 * GiB, 200 * GiB, 90_000, 16_000_000), cap=2 * GiB, max_files=1_000_000)
    already_out = Space(free=100 * GiB, total=200 * GiB, files_free=95_000, files_total=16_000_000)
    assert not over(already_out, Space(100 * GiB, 200 * GiB, 90_000, 16_000_000), cap=2 * GiB, max_files=1_000_000)
    # a filesystem that reports no inode count (btrfs: f_files 0) is judged on bytes alone
    assert not over(Space(100 * GiB, 200 * GiB), Space(100 * GiB, 200 * GiB), cap=2 * GiB, max_files=10)


def test_a_cold_run_making_empty_files_past_its_file_cap_is_killed(tmp_path):
    """Inodes run out before bytes: 200,000 empty files took 9 MiB of ext4 and no byte cap fired."""
    result = run(RunSpec(script=EMPTY_FILES, max_disk_files=20_000, cache_dir=str(tmp_path / "job")))
    assert result.status == "limit" and "disk" in result.limits_fired and "made them all" not in result.stdout
    assert result.signal is None


# what one run of a job adds to the job's cache, which outlives the run
ADD_TO_CACHE = """
import os, time
n = len(os.listdir("/cache"))
for i in range(40):
    with open(f"/cache/blob{n}-{i}", "wb") as f:
        f.write(b"x" * (1 << 20))
    time.sleep(0.05)
print("added 40 MiB")
"""


def test_the_disk_caps_are_the_jobs_not_each_runs(tmp_path):
    """Each run started with the whole cap, so a job's runs could leave cap after cap in its cache
    (three runs of 40 MiB under a 64 MiB cap left 120 MiB)."""
    job = str(tmp_path / "job")
    first = run(RunSpec(script=ADD_TO_CACHE, cache_dir=job, max_disk_bytes=64 * MiB))
    assert first.status == "ok", first.stderr
    second = run(RunSpec(script=ADD_TO_CACHE, cache_dir=job, max_disk_bytes=64 * MiB))
    assert "disk" in second.limits_fired and "added" not in second.stdout
    (tmp_path / "job" / "more").write_bytes(b"x" * (30 * MiB))  # the cache is now past the cap
    third = run(RunSpec(script="import time; time.sleep(10); print('ran')", cache_dir=job, max_disk_bytes=64 * MiB))
    assert "disk" in third.limits_fired and "ran" not in third.stdout and third.duration_s < 8


def test_what_a_job_cache_holds_is_walked_without_following_links(tmp_path):
    (tmp_path / "cache" / "a" / "b").mkdir(parents=True)
    (tmp_path / "cache" / "a" / "b" / "f").write_bytes(b"x" * (1 << 20))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big").write_bytes(b"x" * (8 << 20))
    (tmp_path / "cache" / "link").symlink_to(tmp_path / "elsewhere")
    used, files = held(str(tmp_path / "cache"), 64 * MiB, 1000)
    assert files == 4 and MiB <= used < 2 * MiB
    assert held(str(tmp_path / "cache"), 64 * MiB, 2)[1] == 3  # stops once past a cap
    assert held(str(tmp_path / "missing"), 64 * MiB, 2) == (0, 0)


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
        result = warm.run(RunSpec(script=EMPTY_FILES, max_disk_files=20_000, cache_dir=str(tmp_path / "job2")))
        assert result.warm and "disk" in result.limits_fired and "made them all" not in result.stdout
        first = warm.run(RunSpec(script=ADD_TO_CACHE, cache_dir=str(tmp_path / "job3"), max_disk_bytes=64 * MiB))
        second = warm.run(RunSpec(script=ADD_TO_CACHE, cache_dir=str(tmp_path / "job3"), max_disk_bytes=64 * MiB))
        assert first.status == "ok" and "disk" in second.limits_fired and second.warm
