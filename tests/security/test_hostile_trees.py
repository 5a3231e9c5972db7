"""What a run leaves in its workdir cannot crash or fool the trusted side: symlinks into our secrets,
trees too deep for recursion, files where directories belong, planted output directories."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners import artifacts, minifier, safefs
from runners.sandbox import RunSpec


DEEP = """
import os
fd = os.open('.', os.O_RDONLY)
for _ in range({depth}):
    os.mkdir('d', dir_fd=fd)
    child = os.open('d', os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = child
os.chdir('/proc/self/fd/%d' % fd)
os.chdir('/sandbox')
os.mkdir('locked')
open('locked/f', 'w').write('x')
os.chmod('locked', 0)
print('deep')
"""


def test_a_tree_deeper_than_pythons_recursion_limit_is_removed(runner, private_tmp):
    result = runner(RunSpec(script=DEEP.format(depth=1500)))
    assert result.stdout == "deep\n", result.stderr
    assert result.cleanup_error == "" and result.workdir is None
    assert private_tmp(getattr(runner, "worker", None)) == []  # no workdir left behind


def test_a_kept_deep_tree_is_removed_by_remove_tree(runner):
    result = runner(RunSpec(script=DEEP.format(depth=2000), keep_workdir=True))
    assert Path(result.workdir).is_dir()
    assert safefs.remove_tree(result.workdir) is None
    assert not os.path.exists(result.workdir)


LOOT = """
import os
os.makedirs('torch_compile_debug/run_1/minifier')
open('torch_compile_debug/run_1/output_code.py', 'w').write('kernel')
os.symlink({home!r} + '/.ssh', 'torch_compile_debug/loot')
os.symlink({home!r} + '/.git-credentials', 'torch_compile_debug/run_1/creds')
os.symlink('/root/.ssh', 'torch_compile_debug/run_1/minifier/loot')
os.mkfifo('torch_compile_debug/run_1/fifo')
os.symlink('/nonexistent', 'torch_trace')
print('planted')
"""


def test_artifact_collection_never_follows_a_symlink(runner, planted, tmp_path):
    result = runner(RunSpec(script=LOOT.format(home=str(planted.home)), keep_workdir=True))
    workdir = Path(result.workdir)
    try:
        assert result.stdout == "planted\n", result.stderr
        dest = tmp_path / "artifacts" / "torch_compile_debug"
        collected = artifacts.collect_artifacts(workdir, "torch_compile_debug", dest)
        assert (collected.status, collected.files, collected.skipped) == ("partial", 1, 4)
        assert (dest / "run_1" / "output_code.py").read_text() == "kernel"
        copied = [p for p in dest.rglob("*")]
        assert all(not p.is_symlink() for p in copied) and len([p for p in copied if p.is_file()]) == 1
        for secret in planted.values:
            assert all(secret not in p.read_text() for p in copied if p.is_file())
        # a dangling torch_trace symlink: no artifacts, no traceback
        assert artifacts.collect_artifacts(workdir, "torch_trace", tmp_path / "trace").status == "refused"
        assert artifacts.render_tlparse(workdir / "torch_trace", tmp_path / "tlparse") is None
        # the whole debug dir as a symlink is refused
        os.rename(workdir / "torch_compile_debug", workdir / "real")
        os.symlink(planted.home, workdir / "torch_compile_debug")
        refused = artifacts.collect_artifacts(workdir, "torch_compile_debug", tmp_path / "again")
        assert refused.status == "refused" and not refused
        assert artifacts.copy_tree_capped(workdir / "torch_compile_debug", tmp_path / "compat") == 0
    finally:
        assert safefs.remove_tree(workdir) is None


def test_collection_into_a_planted_output_dir_is_refused(tmp_path, planted):
    source = tmp_path / "source"
    source.mkdir()
    (source / "a.txt").write_text("a")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(planted.home / ".git-credentials", out / "a.txt")  # planted: our copy would write through it
    collected = safefs.collect_tree(source, out)
    assert collected.status == "refused" and "already has content" in collected.reason
    with pytest.raises(safefs.OutputDirNotFresh):
        safefs.OutputDir(out)
    linked = tmp_path / "linked"
    os.symlink(planted.home, linked)
    assert safefs.collect_tree(source, linked).status == "refused"
    assert (planted.home / ".git-credentials").read_text().startswith("https://user:CREDS-")


def test_our_own_writes_replace_a_planted_symlink_instead_of_following_it(tmp_path, planted):
    out = safefs.OutputDir(tmp_path / "out")
    os.symlink(planted.home / ".git-credentials", tmp_path / "out" / "report.json")
    out.write_text("report.json", "{}")
    assert not (tmp_path / "out" / "report.json").is_symlink()
    assert (tmp_path / "out" / "report.json").read_text() == "{}"
    assert (planted.home / ".git-credentials").read_text().startswith("https://user:CREDS-")
    with pytest.raises(safefs.UnsafePath):
        out.write_text("../escape.txt", "x")


LAUNCHER_AS = {
    "directory": "os.makedirs('torch_compile_debug/run_1/minifier/minifier_launcher.py')",
    "dangling symlink": ("os.makedirs('torch_compile_debug/run_1/minifier')\n"
                         "os.symlink('/nonexistent', 'torch_compile_debug/run_1/minifier/minifier_launcher.py')"),
    "symlink to a secret": ("os.makedirs('torch_compile_debug/run_1/minifier')\n"
                            "os.symlink({home!r} + '/.git-credentials', "
                            "'torch_compile_debug/run_1/minifier/minifier_launcher.py')"),
    "directory symlink": ("os.makedirs('torch_compile_debug/run_1')\n"
                          "os.symlink({home!r}, 'torch_compile_debug/run_1/minifier')"),
}


@pytest.mark.parametrize("shape", sorted(LAUNCHER_AS))
def test_a_hostile_minifier_launcher_is_no_launcher(shape, planted, tmp_path):
    script = "import os\n" + LAUNCHER_AS[shape].format(home=str(planted.home))
    outcome = minifier.run_after_aot_minifier(script, level=2, timeout_s=60, keep_dir=tmp_path / "kept")
    assert outcome.launcher_source is None and outcome.minify_run is None, outcome
    assert "no minifier_launcher.py" in outcome.note


FAKE_LAUNCHER = '''
import os, sys
assert sys.argv[1:] == ['minify']
open('repro.py', 'w').write('print("minimized")')
os.symlink('/root/.ssh', 'loot')
os.symlink({home!r}, 'home')
os.makedirs('checkpoints')
open('checkpoints/big', 'w').write('x' * 1000)
'''


def test_the_kept_minifier_directory_holds_no_loot(planted, tmp_path):
    launcher = FAKE_LAUNCHER.format(home=str(planted.home))
    script = ("import os\nos.makedirs('torch_compile_debug/run_1/minifier')\n"
              f"open('torch_compile_debug/run_1/minifier/minifier_launcher.py', 'w').write({launcher!r})\n")
    kept = tmp_path / "kept"
    outcome = minifier.run_after_aot_minifier(script, level=2, timeout_s=60, keep_dir=kept)
    assert outcome.repro_source == 'print("minimized")', outcome.minify_run
    assert sorted(p.name for p in kept.iterdir()) == ["minifier_launcher.py", "repro.py"]
    assert outcome.kept.status == "partial" and outcome.kept.skipped == 2


def test_finding_files_in_a_huge_directory_reads_no_more_than_its_cap(tmp_path):
    """find_regular_files listed a whole directory before counting it against `max_entries`: a run's
    directory of a million empty files cost the trusted side a list of a million entries."""
    import tracemalloc
    from runners.safefs import find_regular_files
    huge = tmp_path / "huge"
    huge.mkdir()
    fd = os.open(huge, os.O_RDONLY)
    try:
        for n in range(100_000):
            os.close(os.open(f"x{n:06d}", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    finally:
        os.close(fd)
    tracemalloc.start()
    try:
        found = find_regular_files(huge, "minifier_launcher.py", max_entries=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [] and peak < 2 << 20, peak


SWAP_CACHE_DIRS = """
import os, shutil
for name in ("inductor_tmp", "inductor_cache"):
    shutil.rmtree(f"/cache/{name}", ignore_errors=True)
    os.symlink("/etc", f"/cache/{name}")
print("swapped")
"""


def test_links_a_run_leaves_in_its_jobs_cache_are_replaced_not_followed_nor_fatal(runner, tmp_path):
    """A run that swapped its job cache's `inductor_tmp` for a link made every later run of the job
    raise UnsafePath out of `run` (no result at all) instead of running."""
    job = tmp_path / "job"
    first = runner(RunSpec(script=SWAP_CACHE_DIRS, cache_dir=str(job)))
    assert first.stdout == "swapped\n", first.stderr
    later = runner(RunSpec(script="import os  # torch\nprint(os.path.isdir('/cache/inductor_tmp'))", cache_dir=str(job)))
    assert later.status == "ok" and later.stdout == "True\n", later.stderr
    assert (job / "inductor_tmp").is_dir() and not (job / "inductor_tmp").is_symlink()
