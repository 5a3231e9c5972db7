"""A CI log with many failures: each distinct one listed with its test id and its own category."""
from __future__ import annotations

from bot.core.failures import distinct_failures


def section(name: str, body: str) -> str:
    return f"{'_' * 20} {name} {'_' * 20}\n{body}\n"


def test_each_test_section_is_classified_on_its_own(classifier, fixture_bytes):
    graph_break = fixture_bytes("fullgraph_data_dependent_branch.log").decode()
    cpp_error = fixture_bytes("inductor_cpp_compile_error.log").decode()
    log = (section("TestA.test_one", graph_break) + section("TestA.test_two", "captured output\n" + cpp_error)
           + section("TestA.test_three", graph_break)
           + "=========== short test summary info ===========\n"
           + "FAILED test/t.py::TestA::test_one - torch._dynamo.exc.Unsupported: Data-dependent branching\n"
           + "FAILED test/t.py::TestB::test_four - AssertionError: Tensor-likes are not close!\n")
    failures = distinct_failures(log.encode(), classifier)
    assert [(f.test, f.category, f.count) for f in failures] == [
        ("TestA.test_one", "graph_break", 2),  # test_three failed the same way: counted, not repeated
        ("TestA.test_two", "backend_compiler_failed", 1),
        ("test/t.py::TestB::test_four", "not_pt2", 1),  # only the summary line tells of it
    ]
    assert failures[0].line == 1


def test_unittest_blocks_and_bare_tracebacks(classifier, fixture_bytes):
    recompile = fixture_bytes("recompile_limit.log").decode()
    log = ("ERROR: test_limit (__main__.RecompileTests.test_limit)\n" + "-" * 70 + "\n" + recompile
           + "\nRan 3 tests in 1.2s\n\n" + fixture_bytes("inductor_runtime_error.log").decode())
    failures = distinct_failures(log.encode(), classifier)
    assert [(f.test, f.category) for f in failures] == [
        ("__main__.RecompileTests.test_limit", "recompilation"), (None, "runtime_crash")]


def test_a_passing_section_is_not_a_failure(classifier):
    log = section("TestA.test_ok", "captured stdout: epoch 1 loss 0.3") + "1 passed\n"
    assert distinct_failures(log.encode(), classifier) == ()
