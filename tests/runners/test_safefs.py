"""Walking, removing and copying trees written by hostile code, on the host side."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners import safefs


def make_deep(root: Path, depth: int, name: str = "d") -> None:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def test_remove_tree_handles_depth_width_and_locked_directories(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    make_deep(tree, 3000, name="x" * 200)  # deeper than the recursion limit and longer than PATH_MAX
    for i in range(500):
        (tree / f"f{i}").write_text("x")
    (tree / "locked").mkdir()
    (tree / "locked" / "inner").mkdir()
    (tree / "locked" / "inner" / "file").write_text("x")
    os.chmod(tree / "locked" / "inner", 0)
    os.chmod(tree / "locked", 0o500)
    os.symlink(tmp_path / "outside", tree / "link")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep").write_text("keep")
    assert safefs.remove_tree(tree) is None
    assert not tree.exists() and (tmp_path / "outside" / "keep").read_text() == "keep"


def test_remove_tree_of_a_symlink_removes_only_the_link(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "file").write_text("x")
    os.symlink(tmp_path / "target", tmp_path / "link")
    assert safefs.remove_tree(tmp_path / "link") is None
    assert (tmp_path / "target" / "file").exists() and not os.path.lexists(tmp_path / "link")
    assert safefs.remove_tree(tmp_path / "missing") is None


def test_collect_tree_caps_files_bytes_and_depth(tmp_path):
    source = tmp_path / "source"
    (source / "a" / "b").mkdir(parents=True)
    for i in range(5):
        (source / "a" / f"{i}.txt").write_text("x" * 100)
    make_deep(source, 40)
    (source / "d" / "note").write_text("shallow")
    os.mkfifo(source / "fifo")
    collected = safefs.collect_tree(source, tmp_path / "dest", max_files=3, max_depth=5)
    assert (collected.status, collected.files, collected.bytes) == ("partial", 3, 300)
    assert "caps reached" in collected.reason and "too deep" in collected.reason
    few = safefs.collect_tree(source / "a", tmp_path / "few", max_bytes=250)
    assert few.files == 2 and few.bytes == 200 and few.status == "partial"
    assert not (tmp_path / "few" / "b").exists()  # directories that hold nothing copied are not made


def test_read_beneath_reads_plain_files_through_plain_directories_only(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "file").write_text("content")
    os.symlink(tmp_path / "dir", tmp_path / "link")
    os.symlink(tmp_path / "dir" / "file", tmp_path / "dir" / "filelink")
    assert safefs.read_beneath(tmp_path, "dir/file", 3) == b"con"
    assert safefs.read_beneath(tmp_path, "link/file", 100) is None
    assert safefs.read_beneath(tmp_path, "dir/filelink", 100) is None
    assert safefs.read_beneath(tmp_path, "dir", 100) is None
    with pytest.raises(safefs.UnsafePath):
        safefs._parts("../x")


def test_find_regular_files_skips_symlinked_directories(tmp_path):
    (tmp_path / "a" / "minifier").mkdir(parents=True)
    (tmp_path / "a" / "minifier" / "minifier_launcher.py").write_text("x")
    (tmp_path / "b" / "minifier" / "minifier_launcher.py").mkdir(parents=True)
    os.symlink(tmp_path / "a", tmp_path / "c")
    found = safefs.find_regular_files(tmp_path, "minifier_launcher.py")
    assert [relative for relative, _ in found] == ["a/minifier/minifier_launcher.py"]


def test_output_dir_takes_an_empty_dir_and_refuses_content(tmp_path):
    (tmp_path / "empty").mkdir()
    out = safefs.OutputDir(tmp_path / "empty")
    assert out.write_text("sub/report.json", "{}") == tmp_path / "empty" / "sub" / "report.json"
    with pytest.raises(safefs.OutputDirNotFresh):
        safefs.OutputDir(tmp_path / "empty")
    collected = out.collect(tmp_path / "empty" / "sub", "copy")
    assert collected.status == "copied" and (tmp_path / "empty" / "copy" / "report.json").read_text() == "{}"
