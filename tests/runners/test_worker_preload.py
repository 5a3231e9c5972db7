"""The warm server's preload: a C++ build that failed once in a job fails again at once, with the
compiler's own output, and an object file built once is put in place without building it again; the
modules torch imports lazily are imported once, where this torch has them."""
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


BUILDER = 'echo "$1" >> "$(dirname "$0")/runs"; echo "note: built $1"; cat "$1" > "$4"\n'


def build_object(remembering, tmp_path, source="kernel.cpp"):
    cmd = ["sh", str(tmp_path / "cc"), str(tmp_path / source), "-c", "-o", str(tmp_path / "kernel.o")]
    return remembering.run(cmd, cwd=str(tmp_path), check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_an_object_built_once_is_put_in_place_with_the_compilers_output(remembering, tmp_path):
    (tmp_path / "cc").write_text(BUILDER)
    first = build_object(remembering, tmp_path)
    (tmp_path / "kernel.o").write_text("left by another candidate's build")
    second = build_object(remembering, tmp_path)
    assert runs(tmp_path) == 1
    assert (second.returncode, second.stdout) == (0, first.stdout)
    assert (tmp_path / "kernel.o").read_text() == "int f() { return 1 }\n"


def test_an_object_from_a_changed_source_is_built_again(remembering, tmp_path):
    (tmp_path / "cc").write_text(BUILDER)
    build_object(remembering, tmp_path)
    (tmp_path / "kernel.cpp").write_text("int f() { return 2; }\n")
    build_object(remembering, tmp_path)
    assert runs(tmp_path) == 2
    assert (tmp_path / "kernel.o").read_text() == "int f() { return 2; }\n"


def test_comments_appended_after_the_code_do_not_change_the_build(remembering, tmp_path):
    """AOTInductor appends its compile and link commands to the source after every build."""
    (tmp_path / "cc").write_text(BUILDER)
    build_object(remembering, tmp_path)
    with open(tmp_path / "kernel.cpp", "a") as source:
        source.write("\n// Compile cmd\n// g++ kernel.cpp -c -o kernel.o\n")
    build_object(remembering, tmp_path)
    assert runs(tmp_path) == 1
    (tmp_path / "kernel.cpp").write_text("// int f() { return 1 }\nint f() { return 1 }\n")
    build_object(remembering, tmp_path)
    assert runs(tmp_path) == 2


def test_a_build_without_an_object_file_is_never_remembered(remembering, tmp_path):
    (tmp_path / "cc").write_text(BUILDER)
    cmd = ["sh", str(tmp_path / "cc"), str(tmp_path / "kernel.cpp"), "-shared", "-o", str(tmp_path / "model.so")]
    for _ in range(2):
        remembering.run(cmd, cwd=str(tmp_path), check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert runs(tmp_path) == 2


def test_the_warm_imports_list_skips_comments_and_a_missing_list_is_empty(tmp_path):
    (tmp_path / preload.WARM_IMPORTS).write_text("# written by a script\njson\n\nshlex\n")
    assert preload.read_warm_imports(tmp_path) == ("json", "shlex")
    assert preload.read_warm_imports(tmp_path / "elsewhere") == ()


def test_a_module_this_interpreter_lacks_is_skipped_and_the_rest_imported():
    assert preload.import_present(["colorsys", "no_such_module_anywhere", "wave"]) == ["no_such_module_anywhere"]
    assert {"colorsys", "wave"} <= set(sys.modules)
