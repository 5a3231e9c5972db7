"""Classification examples: real torch 2.13 output (fixtures/) and the confusable cases."""
from __future__ import annotations

import mmap

import pytest


from tests import paths

CORPUS_RECORDED = paths.CORPUS / "recorded"

VERBOSE_FOOTER = ("Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if "
                  "you're reporting a bug to PyTorch). For even more developer context, set TORCH_LOGS=\"+dynamo\"\n")


@pytest.mark.parametrize("fixture, category, rule", [
    ("fullgraph_data_dependent_branch.log", "graph_break", "unsupported_exception"),
    ("inductor_cpp_compile_error.log", "backend_compiler_failed", "cpp_compile_error"),
    ("recompile_limit.log", "recompilation", "recompile_limit_hit"),
    ("export_data_dependent.log", "export_failure", "export_error_footer"),
    ("graph_break_log_only.log", "graph_break", "graph_break_log"),
    ("inductor_runtime_error.log", "runtime_crash", "raised_in_generated_code"),
])
def test_real_torch_output(classifier, fixture_bytes, fixture, category, rule):
    result = classifier.classify(fixture_bytes(fixture), report=False)  # a run's output: the rules decide
    assert (result.category, result.rule) == (category, rule)
    assert 0.5 <= result.confidence <= 1
    assert classifier.classify(fixture_bytes(fixture), report=True).category == category  # read as a pasted report


def test_graph_break_carries_registry_id_and_points_at_the_exception_line(classifier, fixture_bytes):
    result = classifier.classify(fixture_bytes("fullgraph_data_dependent_branch.log"))
    assert result.graph_break_id == "GB0170"
    assert result.evidence[0].text == "torch._dynamo.exc.Unsupported: Data-dependent branching"
    lines = fixture_bytes("fullgraph_data_dependent_branch.log").decode().split("\n")
    assert lines[result.evidence[0].line - 1] == result.evidence[0].text


def test_graph_break_id_from_the_logged_break(classifier, fixture_bytes):
    assert classifier.classify(fixture_bytes("graph_break_log_only.log")).graph_break_id == "GB0124"


def test_graph_break_id_by_gb_type_when_no_url_is_printed(classifier):
    text = "Traceback (most recent call last):\n  File \"r.py\", line 3, in f\ntorch._dynamo.exc.Unsupported: Data-dependent branching\n"
    assert classifier.classify_text(text).graph_break_id == "GB0170"


def test_cpp_compile_error_evidence_is_the_error_line_not_the_warnings(classifier, fixture_bytes):
    result = classifier.classify(fixture_bytes("inductor_cpp_compile_error.log"))
    texts = [e.text for e in result.evidence]
    assert any("error: ‘compile’ was not declared in this scope" in t for t in texts)
    assert not any("warning:" in t for t in texts)
    assert "error: ‘compile’ was not declared" in result.signature


def test_chained_exception_root_cause_decides(classifier, fixture_bytes):
    # The chain ends in FailOnRecompileLimitHit; its cause is an Unsupported (a graph-break type).
    result = classifier.classify(fixture_bytes("recompile_limit.log"))
    assert result.category == "recompilation"
    assert result.exception_type == "torch._dynamo.exc.FailOnRecompileLimitHit"


def test_signature_is_machine_independent(classifier, fixture_bytes):
    original = fixture_bytes("inductor_runtime_error.log")
    moved = (original.replace(b"/work/main/.venv/lib/python3.11/site-packages", b"/opt/conda/lib/python3.10/site-packages")
             .replace(b"/tmp/torchinductor_root/eh/cehv26dolnjxuebw3vraqncvhpvl2z7iwj2gazjgqjfdwcn7ho2r.py",
                      b"/tmp/torchinductor_ci/ab/cabq6dolnjxuebw3vraqncvhpvl2z7iwj2gazjgqjfdwcn7ho99.py")
             .replace(b"line 80", b"line 91"))
    assert classifier.classify(original).signature == classifier.classify(moved).signature


def test_a_wrapper_that_announces_its_error_carries_it_in_the_signature(classifier):
    """`backend='inductor' raised:` alone would make every failure under the wrapper one signature
    (and "the same failure" to the minimizer): the announced line is part of it."""
    def signature(inner: str) -> str:
        text = ("Traceback (most recent call last):\n  File \"repro.py\", line 9, in <module>\n    compiled(x)\n"
                f"torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n{inner}\n\n"
                "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace\n")
        return classifier.classify(text.encode()).signature

    derivative = signature("NotImplementedError: the derivative for 'igamma: input' is not implemented.")
    assert derivative.endswith("|backend='inductor' raised:|NotImplementedError: the derivative for 'igamma: input' is not implemented.")
    assert derivative != signature("RuntimeError: Cannot access data pointer of Tensor that doesn't have storage")


def test_mmap_input_gives_the_same_result_as_bytes(classifier, tmp_path, fixture_bytes):
    data = fixture_bytes("export_data_dependent.log")
    path = tmp_path / "log.txt"
    path.write_bytes(data)
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert classifier.classify(mapped) == classifier.classify(data)


# --- confusable pairs --------------------------------------------------------------------------

def _traceback(*frames: str, error: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for frame in frames:
        lines += [f'  File "{frame}", line 10, in fn', "    call()"]
    return "\n".join(lines + [error]) + "\n"


USER = "/home/me/repro.py"
SITE = "/usr/lib/python3.11/site-packages/"


def test_data_dependent_error_under_export_is_an_export_failure(classifier):
    text = _traceback(USER, SITE + "torch/export/_trace.py", SITE + "torch/fx/experimental/symbolic_shapes.py",
                      error="torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1)")
    assert classifier.classify_text(text).category == "export_failure"


def test_data_dependent_error_under_compile_is_dynamic_shapes(classifier):
    # eval_frame.py and UserError are on strict export's path too: the code shows it is torch.compile
    text = "```python\nout = torch.compile(fn)(x)\n```\n\n" + _traceback(
        USER, SITE + "torch/_dynamo/eval_frame.py",
        error="torch._dynamo.exc.UserError: Could not guard on data-dependent expression u0 > 0 (unhinted: u0 > 0)")
    assert classifier.classify_text(text).category == "dynamic_shapes"


def test_unsupported_under_fullgraph_is_a_graph_break_not_export(classifier):
    text = _traceback(USER, SITE + "torch/_dynamo/eval_frame.py", error="torch._dynamo.exc.Unsupported: Call to `torch._dynamo.graph_break()`")
    assert classifier.classify_text(text).category == "graph_break"


def test_triton_runtime_assert_is_a_triton_kernel_bug(classifier):
    text = ("/tmp/torchinductor_u/ab/cabc.py:23: unknown: block: [0,0,0], thread: [32,0,0] "
            "Assertion `index out of bounds: 0 <= tmp4 < 64` failed.\n"
            + _traceback(USER, SITE + "torch/_inductor/runtime/triton_heuristics.py",
                         error="RuntimeError: CUDA error: device-side assert triggered"))
    assert classifier.classify_text(text).category == "triton_kernel_bug"


def test_triton_compile_error_is_a_triton_kernel_bug_but_cpp_compile_error_is_backend(classifier):
    triton = _traceback(USER, SITE + "torch/_inductor/async_compile.py",
                        error="torch._inductor.exc.InductorError: CompilationError: at 7:11:\n    tmp1 = compile error!\n           ^\ntriton.compiler.errors.CompilationError")
    cpp = _traceback(USER, SITE + "torch/_inductor/cpp_builder.py", error="torch._inductor.exc.InductorError: CppCompileError: C++ compile error")
    assert classifier.classify_text(triton).category == "triton_kernel_bug"
    assert classifier.classify_text(cpp).category == "backend_compiler_failed"


def test_mismatch_with_compile_in_the_picture_is_accuracy(classifier):
    text = "out_c = torch.compile(model)(x)\n" + _traceback(
        USER, SITE + "torch/testing/_comparison.py",
        error="AssertionError: Tensor-likes are not close!\n\nMismatched elements: 8 / 8 (100.0%)")
    assert classifier.classify_text(text).category == "accuracy"


def test_mismatch_in_plain_eager_code_is_not_pt2(classifier):
    text = "expected = np.sin(a)\n" + _traceback(
        USER, SITE + "torch/testing/_comparison.py",
        error="AssertionError: Tensor-likes are not close!\n\nMismatched elements: 8 / 8 (100.0%)")
    assert classifier.classify_text(text, report=False).category == "not_pt2"


OWN_CHECK_FAILED = """\
Traceback (most recent call last):
  File "/tmp/ema.py", line 58, in <module>
    main()
  File "/tmp/ema.py", line 52, in main
    assert torch.allclose(eager_logits, compiled_logits, atol=1e-4), (
AssertionError: step 0: teacher logits differ by 1.0453
"""


@pytest.mark.parametrize("check", ["assert torch.allclose(eager_logits, compiled_logits, atol=1e-4), (",
                                   "assert (eager_logits == compiled_logits).all()",
                                   "assert torch.all(eager_logits == compiled_logits)",
                                   "assert (eager_logits - compiled_logits).abs().max() < 1e-4"])
def test_the_scripts_own_value_check_failing_under_compile_is_accuracy(classifier, check):
    """Real repros check their own numbers: `assert torch.allclose(eager, compiled)` raising is an
    accuracy failure, though no torch frame and no PT2 word is in the error."""
    script = "compiled_teacher = torch.compile(teacher)\n"
    output = OWN_CHECK_FAILED.replace("assert torch.allclose(eager_logits, compiled_logits, atol=1e-4), (", check)
    result = classifier.classify(output.encode(), context=script, report=False)
    assert (result.category, result.rule) == ("accuracy", "failed_value_check")
    assert f"raised by `{check}`" in result.evidence[0].text


def test_a_report_of_wrong_numbers_from_an_aoti_package_is_an_aoti_failure(classifier):
    """LABELING.md's tie-break 1 (the entry point owns what surfaced below it) comes before wrong
    numbers' tie-break 4. The verdict picks the first run's diagnostics: AOTInductor's input
    checks then show the cause (a stride the package did not expect) instead of a silent mismatch."""
    report = ("# Exported model gives different logits\n\n```python\n"
              "package = torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)))\n"
              "out = torch._inductor.aoti_load_package(package)(batch)\n```\n\n```\n" + OWN_CHECK_FAILED + "```\n")
    assert classifier.classify_text(report).category == "aoti_failure"
    compiled = report.replace("torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)))",
                              "torch.compile(model)").replace("torch._inductor.aoti_load_package(package)", "package")
    assert classifier.classify_text(compiled).category == "accuracy"


def test_an_assert_on_anything_but_values_is_not_read_as_a_value_check(classifier):
    shape_check = OWN_CHECK_FAILED.replace("assert torch.allclose(eager_logits, compiled_logits, atol=1e-4), (",
                                           "assert logits.shape == (4, 5), (")
    script = "compiled_teacher = torch.compile(teacher)\n"
    assert classifier.classify(shape_check.encode(), context=script, report=False).rule != "failed_value_check"


def test_eager_oom_in_an_issue_that_mentions_compile_in_passing_is_not_pt2(classifier):
    text = ("We use torch.compile elsewhere in the project, but this fails before it.\n"
            + _traceback(USER, SITE + "torch/nn/modules/module.py", SITE + "torch/nn/modules/linear.py",
                         error="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert classifier.classify_text(text, report=False).category == "not_pt2"


OOM_IN_BACKWARD = _traceback(USER, SITE + "torch/_tensor.py", SITE + "torch/autograd/__init__.py",
                             error="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB")


def test_a_reporter_who_says_the_compiler_is_not_in_use_is_believed_when_nothing_contradicts_it(classifier):
    text = ("# OOM in backward while fine-tuning\n\nI read that torch.compile can save memory and plan to try it, "
            "but right now I'm not using it at all: this is plain eager.\n" + OOM_IN_BACKWARD)
    stated = classifier.classify_text(text)
    assert stated.category == "not_pt2" and "prose:compiler_not_used" in stated.features
    # Without the statement nothing rules PT2 out: whatever the model makes of an OOM in backward,
    # it is not the reporter's word that decides.
    unstated = classifier.classify_text(text.replace("but right now I'm not using it at all: this is plain eager", "and did"))
    assert "prose:compiler_not_used" not in unstated.features and unstated.decided_by != "rule"


def test_the_same_words_do_not_outweigh_code_that_calls_the_compiler(classifier):
    text = ("# OOM in backward\n\nI'm not using it at all in training, only here:\n"
            "```python\nmodel = torch.compile(model)\nloss = model(x).sum()\nloss.backward()\n```\n" + OOM_IN_BACKWARD)
    assert classifier.classify_text(text).category != "not_pt2"


SHAPE_ERROR_IN_EAGER = _traceback(USER, SITE + "torch/nn/modules/module.py", SITE + "torch/nn/modules/linear.py",
                                  error="RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)")


def test_eager_fails_too_with_an_eager_traceback_is_not_pt2(classifier):
    """The reporter compiles in production (the code says so) but disabled the compiler and it still
    fails, and the traceback shown never enters the compiler: the eager bug LABELING.md files as
    `not_pt2`. Either piece alone leaves PT2 open."""
    text = ("# Shape error in the classifier head\n\nWe run it with torch.compile in production, but I disabled "
            "compile to debug and it still happens.\n```python\nhead = torch.compile(head)\n```\n" + SHAPE_ERROR_IN_EAGER)
    evidence = classifier.report_evidence(text.encode())
    assert evidence.features.says_eager_fails_too and evidence.features.pt2_entry_point
    assert classifier.classify_text(text).category == "not_pt2"
    unsaid = text.replace("but I disabled compile to debug and it still happens", "and it fails")
    assert not classifier.report_evidence(unsaid.encode()).eager_error_shown("not_pt2")
    through_dynamo = text.replace(SITE + "torch/nn/modules/module.py", SITE + "torch/_dynamo/eval_frame.py")
    assert not classifier.report_evidence(through_dynamo.encode()).eager_error_shown("not_pt2")


def test_also_running_the_eager_model_is_not_saying_eager_fails_too(classifier):
    """"We also run the eager model in shadow mode" compares against eager; "eager mode" must not
    match inside "eager model" and turn the report into an eager bug."""
    shadow = ("# Package gives other numbers\n\nFor every request we also run the eager model in shadow mode and "
              "compare.\n```python\npkg = torch._inductor.aoti_compile_and_package(ep)\n```\n")
    assert not classifier.report_evidence(shadow.encode()).features.says_eager_fails_too
    said = shadow.replace("also run the eager model in shadow mode and compare", "see the same error in eager mode too")
    assert classifier.report_evidence(said.encode()).features.says_eager_fails_too


def test_an_unsure_verdict_left_one_category_names_it_with_the_stated_confidence(classifier):
    """When the evidence leaves only `not_pt2` open, the model's share of it is no probability to
    show ("not_pt2 (0%)"): the one alternative carries the verdict's own confidence."""
    text = ("# Shape error in the classifier head\n\nWe run it with torch.compile in production, but I disabled "
            "compile to debug and it still happens.\n```python\nhead = torch.compile(head)\n```\n" + SHAPE_ERROR_IN_EAGER)
    verdict = classifier.classify_text(text)
    assert verdict.category == "not_pt2"
    assert verdict.alternatives == (("not_pt2", verdict.confidence),)


MISSING_HEADER_BUILD = (
    "# torch.compile fails on my Mac\n\n```python\nmodel = torch.compile(model)\nout = model(x)\n```\n"
    "In file included from /tmp/torchinductor_me/ab/cabc.cpp:2:\n"
    "/tmp/torchinductor_me/xy/cxy.h:8:10: fatal error: 'omp.h' file not found\n#include <omp.h>\n"
    + _traceback(USER, SITE + "torch/_inductor/codecache.py", SITE + "subprocess.py",
                 error="subprocess.CalledProcessError: Command '['g++', 'cabc.cpp']' returned non-zero exit status 1."))


def test_a_missing_toolchain_is_an_install_problem_though_the_compiler_ran(classifier):
    """LABELING.md tie-break 7: the C++ compiler Inductor calls cannot find `omp.h`, so the error runs
    through Inductor and the code calls torch.compile, yet it is an install problem. The final error
    (a CalledProcessError) does not say so; the compiler's own line before it does."""
    evidence = classifier.report_evidence(MISSING_HEADER_BUILD.encode())
    assert evidence.calls_pt2 and evidence.toolchain_missing
    assert classifier.classify_text(MISSING_HEADER_BUILD).category == "not_pt2"
    present = MISSING_HEADER_BUILD.replace("fatal error: 'omp.h' file not found", "error: 'tmp3' was not declared in this scope")
    assert classifier.classify_text(present).category != "not_pt2"  # the tool ran and failed on the generated code


def test_a_comparison_with_eager_is_not_a_statement_that_the_compiler_is_unused(classifier):
    features = classifier.report_evidence(b"# Wrong output\n\nIt works fine when I did not use torch.compile.\n").features
    assert not features.says_compiler_not_used


# --- noise ---------------------------------------------------------------------------------------

WARNINGS = (
    "/site-packages/torch/_inductor/compile_fx.py:236: UserWarning: TensorFloat32 tensor cores for float32 matrix "
    "multiplication available but not enabled. Consider setting `torch.set_float32_matmul_precision('high')`\n"
    "  warnings.warn(\n"
    "/site-packages/torch/_dynamo/variables/functions.py:1500: FutureWarning: `torch._dynamo.config.foo` is deprecated\n"
)


def test_warnings_and_footers_alone_are_not_a_failure(classifier):
    result = classifier.classify_text(WARNINGS + VERBOSE_FOOTER + "epoch 1 loss 0.31\n", report=False)
    assert result.category == "not_pt2"
    assert result.exception_type is None


def test_warnings_and_footers_do_not_hide_the_real_error(classifier, fixture_bytes):
    data = WARNINGS.encode() + fixture_bytes("inductor_cpp_compile_error.log") + (WARNINGS + VERBOSE_FOOTER).encode()
    result = classifier.classify(data)
    assert result.category == "backend_compiler_failed"
    assert result.exception_type == "torch._inductor.exc.InductorError"


def test_a_passing_test_that_prints_compile_is_not_pt2(classifier):
    text = ("test_compile_speed (__main__.TestCompile.test_compile_speed) ... ok\n"
            "compiled model in 3.2s with torch.compile\n----\nRan 1 test in 3.5s\n\nOK\n")
    assert classifier.classify_text(text, report=False).category == "not_pt2"


def test_last_error_wins_over_earlier_noise(classifier, fixture_bytes):
    noise = _traceback(USER, error="KeyError: 'harmless retry'") + "retrying\n" + VERBOSE_FOOTER
    result = classifier.classify(noise.encode() + fixture_bytes("fullgraph_data_dependent_branch.log"))
    assert result.category == "graph_break"


def test_pytest_ci_log_with_timestamps_and_colours(classifier):
    log = "\n".join(f"2026-11-20T10:11:{i:02d}.1234567Z {line}" for i, line in enumerate([
        "\x1b[1m_______________ TestRepro.test_cond _______________\x1b[0m",
        "test/dynamo/test_x.py:41: in test_cond",
        "    torch.compile(f, fullgraph=True)(x)",
        "torch/_dynamo/eval_frame.py:1183: in compile_wrapper",
        "\x1b[31mE   torch._dynamo.exc.Unsupported: Data-dependent branching\x1b[0m",
        "\x1b[31mE     Explanation: Detected data-dependent branching\x1b[0m",
        "=========================== short test summary info ============================",
        "FAILED test/dynamo/test_x.py::TestRepro::test_cond - torch._dynamo.exc.Unsupported: Data-dependent branching",
    ]))
    result = classifier.classify_text(log)
    assert result.category == "graph_break"
    assert result.graph_break_id == "GB0170"
    assert classifier.scanner.scan(log.encode()).failing_tests == ["test/dynamo/test_x.py::TestRepro::test_cond"]


# --- bad input -------------------------------------------------------------------------------------

def test_empty_input(classifier):
    result = classifier.classify(b"")
    assert (result.category, result.evidence) == ("not_pt2", ())


def test_binary_garbage(classifier):
    import random
    garbage = bytes(random.Random(0).randrange(256) for _ in range(200_000))
    assert classifier.classify(garbage).category in ("not_pt2", "unknown")


def test_non_utf8_and_crlf(classifier, fixture_bytes):
    data = fixture_bytes("fullgraph_data_dependent_branch.log").replace(b"\n", b"\r\n")
    data = data.replace(b"Traceback (most recent", b"\xff\xfe junk\r\nTraceback (most recent")
    result = classifier.classify(data)
    assert result.category == "graph_break"
    assert result.evidence[0].text == "torch._dynamo.exc.Unsupported: Data-dependent branching"


def test_ansi_coloured_traceback(classifier, fixture_bytes):
    data = fixture_bytes("fullgraph_data_dependent_branch.log").replace(
        b"torch._dynamo.exc.Unsupported", b"\x1b[1;35mtorch._dynamo.exc.Unsupported\x1b[0m")
    assert classifier.classify(data).category == "graph_break"


def test_50mb_log_with_the_error_on_the_last_line(classifier):
    filler = b"2026-11-20T10:11:12.1234567Z test/test_ops.py::TestCommon::test_add PASSED [ 12%]\n"
    data = filler * (50_000_000 // len(filler)) + b"torch._dynamo.exc.Unsupported: Data-dependent branching"
    result = classifier.classify(data)
    assert result.category == "graph_break"
    assert result.evidence[0].line == data.count(b"\n") + 1


def test_a_device_assert_from_an_earlier_test_does_not_outrank_the_final_error(classifier, fixture_bytes):
    """A CI job runs many tests: a line rule that fired on an earlier test's output is evidence,
    and the error the log ends with is the verdict."""
    earlier = (CORPUS_RECORDED / "triton_runtime_assert.log").read_bytes()
    log = earlier + b"\n" + fixture_bytes("fullgraph_data_dependent_branch.log")
    assert classifier.classify(earlier, report=False).category in ("triton_kernel_bug", "runtime_crash")
    result = classifier.classify(log, report=False)
    assert (result.category, result.rule) == ("graph_break", "unsupported_exception")


def test_an_error_at_the_end_of_a_line_megabytes_long_is_still_found(classifier):
    """Hostile or broken logs (a binary blob without newlines, then the traceback) get a verdict."""
    text = (b"\x00" * (6 << 20) + b"Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
            b"torch._dynamo.exc.Unsupported: Data-dependent branching\n")
    result = classifier.classify(text, report=False)
    assert (result.category, result.rule) == ("graph_break", "unsupported_exception")


CUDA_FAULTS = (
    "torch.AcceleratorError: CUDA error: operation not supported on global/shared address space",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "RuntimeError: CUDA error: misaligned address",
    "RuntimeError: CUDA error: device-side assert triggered",
    "RuntimeError: Triton Error [CUDA]: an illegal instruction was encountered",
)


@pytest.mark.parametrize("error", CUDA_FAULTS)
def test_a_cuda_fault_in_our_run_is_a_runtime_crash_whatever_raised_it(classifier, error):
    """A user's own Triton kernel faulting (no torch.compile anywhere) is still not "ran clean"."""
    output = f'Traceback (most recent call last):\n  File "/sandbox/repro.py", line 9, in <module>\n    torch.cuda.synchronize()\n{error}\n'
    script = "import torch\nimport triton\n\n@triton.jit\ndef kernel(p):\n    pass\n"
    assert classifier.classify_text(output, context=script).category == "runtime_crash"


def test_torch_export_save_failing_in_the_pt2_archive_is_exports_not_aotis(classifier):
    """torch.export.save writes the same archive format AOTInductor packages use (fresh_issues_5: a
    sparse buffer's storage); only a loaded package's call there is AOTI's."""
    site = "/venv/lib/python3.11/site-packages/torch"
    saving = ("Traceback (most recent call last):\n  File \"/tmp/train_gcn.py\", line 82, in main\n"
              "    torch.export.save(ep, path)\n"
              f"  File \"{site}/export/__init__.py\", line 274, in save\n    package_pt2(f, exported_programs=ep)\n"
              f"  File \"{site}/export/pt2_archive/_package.py\", line 712, in package_pt2\n    x()\n"
              "NotImplementedError: Cannot access storage of SparseTensorImpl\n")
    assert classifier.classify_text(saving).category == "export_failure"
    script = "import torch\nep = torch.export.export(model, (x,))\ntorch.export.save(ep, path)\n"
    ran = classifier.classify_text(saving, context=script)  # a run's output: the rules alone decide
    assert (ran.category, ran.rule) == ("export_failure", "export_frames"), ran
    calling = ("Traceback (most recent call last):\n  File \"/sandbox/repro.py\", line 23, in <module>\n    runner(x)\n"
               f"  File \"{site}/export/pt2_archive/_package.py\", line 743, in __call__\n    y()\n"
               "RuntimeError: input_handles[0]: unmatched dim value at 0, expected: 2, but got: 3\n")
    assert classifier.classify_text(calling).category == "aoti_failure"
