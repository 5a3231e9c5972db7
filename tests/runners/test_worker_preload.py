"""The warm server's preload: a C++ build that failed once in a job fails again at once, with the
compiler's own output; the modules torch imports lazily are imported once, where this torch has them."""
from __future__ import annotations

import subprocess
import sys

import pytest

from runners import _worker_preload as preload

COMPILER = 'echo "$1" >> "$(dirname "$0")/runs"; echo "$1:1:1: error: expected \';\'"; exit 1\n'


@pytest.fixture
def remembering(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cc").write_text(COMPILER)
    (tmp_path / "kernel.cpp").write_text("int f() { return 1 }\n")
    return preload._RememberingSubprocess(subprocess)


def compile_kernel(remembering, tmp_path):
    cmd = ["sh", str(tmp_path / "cc"), str(tmp_path / "kernel.cpp")]
    with pytest.raises(subprocess.CalledProcessError) as failed:
        remembering.run(cmd, cwd=str(tmp_path), check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return failed.value


def runs(tmp_path):
    return (tmp_path / "runs").read_text().count("\n")


def test_the_same_failing_build_is_answered_from_the_memo_with_the_same_output(remembering, tmp_path):
    first = compile_kernel(remembering, tmp_path)
    second = compile_kernel(remembering, tmp_path)
    assert runs(tmp_path) == 1
    assert (second.returncode, second.cmd, second.output) == (first.returncode, first.cmd, first.output)
    assert b"error: expected ';'" in second.output


def test_a_changed_source_file_is_built_again(remembering, tmp_path):
    compile_kernel(remembering, tmp_path)
    (tmp_path / "kernel.cpp").write_text("int f() { return 2 }\n")
    compile_kernel(remembering, tmp_path)
    assert runs(tmp_path) == 2


def test_a_failure_the_compiler_did_not_diagnose_is_never_remembered(remembering, tmp_path):
    (tmp_path / "cc").write_text('echo "$1" >> "$(dirname "$0")/runs"; kill -9 $$\n')
    compile_kernel(remembering, tmp_path)
    compile_kernel(remembering, tmp_path)
    assert runs(tmp_path) == 2


def test_runs_of_another_shape_pass_through(remembering, tmp_path):
    cmd = ["sh", str(tmp_path / "cc"), str(tmp_path / "kernel.cpp")]
    for _ in range(2):
        with pytest.raises(subprocess.CalledProcessError):
            remembering.run(cmd, capture_output=True, text=True, check=True)
    assert runs(tmp_path) == 2
    assert remembering.PIPE is subprocess.PIPE  # everything else is the real module


def test_the_warm_imports_list_skips_comments_and_a_missing_list_is_empty(tmp_path):
    (tmp_path / preload.WARM_IMPORTS).write_text("# written by a script\njson\n\nshlex\n")
    assert preload.read_warm_imports(tmp_path) == ("json", "shlex")
    assert preload.read_warm_imports(tmp_path / "elsewhere") == ()


def test_a_module_this_interpreter_lacks_is_skipped_and_the_rest_imported():
    assert preload.import_present(["colorsys", "no_such_module_anywhere", "wave"]) == ["no_such_module_anywhere"]
    assert {"colorsys", "wave"} <= set(sys.modules)
