"""`pt2-triage triage` end to end on the bundled example issues, with real torch.

Each example goes through the whole pipeline; the checks are what a maintainer relies on: the
comment names the right category, the minimized repro still fails the same way, the generated
test fails against the installed torch for the same reason, and the test file is topic-specific.
"""
import json

import pytest

from bot.cli.main import main
from bot.core.classify import Classifier
from bot.core.graph_breaks import load_registry
from bot.pipeline.reproduce import ALWAYS_ENV, output_text
from bot.core.ruleset import load_ruleset
from runners import sandbox
from tests import paths

EXAMPLES = paths.EXAMPLES
CLASSIFIER = Classifier(load_ruleset(), load_registry())
CASES = [
    ("graph_break_fullgraph.md", "graph_break", "test/dynamo/test_repros.py", "test_data_dependent_branching_issue_"),
    ("inductor_compile_error.md", "backend_compiler_failed", "test/inductor/test_cpu_repro.py", "test_relu_inductor_compiles_issue_"),
    ("accuracy_relu.md", "accuracy", "test/inductor/test_cpu_repro.py", "test_relu_compiled_matches_eager_issue_"),
    ("recompile_limit.md", "recompilation", "test/dynamo/test_recompiles.py", "test_no_recompile_beyond_limit_issue_"),
]


def run_cli(*args: str) -> int:
    return main([*args])


@pytest.mark.slow
@pytest.mark.parametrize("example, category, test_file, test_prefix", CASES, ids=[c[0] for c in CASES])
def test_triage_an_example_issue_end_to_end(example, category, test_file, test_prefix, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli("triage", str(EXAMPLES / example), "--out", str(out), "--issue-number", "4242",
                   "--budget", "30", "--no-minifier") == 0
    report = json.loads((out / "report.json").read_text())
    assert report["classification"]["category"] == category
    assert report["reproduction"]["reproduced"] is True
    assert set(report["stage_seconds"]) >= {"reproduce", "minimize", "suggest", "regress"}

    comment = (out / "comment.md").read_text()
    assert f"(`{category}`)" in comment.splitlines()[1]

    minimized = (out / "repro_min.py").read_text()
    assert report["minimized"]["signature_preserved"] and report["minimized"]["lines_after"] <= report["minimized"]["lines_before"]
    again = CLASSIFIER.classify_text(output_text(sandbox.run(sandbox.RunSpec(script=minimized, env=dict(ALWAYS_ENV)))))
    assert (again.category, again.signature) == (category, report["classification"]["signature"])

    assert report["test_suggestion"]["path"] == test_file
    test = report["regression_test"]
    assert test["test_name"].startswith(test_prefix) and test["test_name"].endswith("_issue_4242")
    assert test["verification"] == "fails_same", test["verification_note"]
    assert (out / "test_regression.py").read_text() == test["file_source"]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.slow
def test_triage_with_a_pytorch_checkout_writes_a_patch_into_the_suggested_class(tmp_path, capsys):
    root = tmp_path / "pytorch"
    (root / "test/dynamo").mkdir(parents=True)
    (root / "test/dynamo/test_repros.py").write_text(
        "import torch\nfrom torch._dynamo.test_case import run_tests, TestCase\n\n\n"
        "class ReproTests(TestCase):\n    def test_existing(self):\n        torch.relu(torch.ones(1))\n\n\n"
        'if __name__ == "__main__":\n    run_tests()\n')
    out = tmp_path / "out"
    assert run_cli("triage", str(EXAMPLES / "graph_break_fullgraph.md"), "--out", str(out), "--issue-number", "9",
                   "--pytorch-root", str(root), "--budget", "30", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["test_suggestion"]["confirmed"] and report["test_suggestion"]["test_class"] == "ReproTests"
    patch = (out / "test.patch").read_text()
    assert patch.startswith("--- a/test/dynamo/test_repros.py") and "+    def test_data_dependent_branching_issue_9(self):" in patch


def test_triage_rejects_a_missing_input_and_a_non_checkout(tmp_path, capsys):
    assert run_cli("triage", str(tmp_path / "nope.md")) == 2
    issue = tmp_path / "issue.md"
    issue.write_text("hello")
    assert run_cli("triage", str(issue), "--pytorch-root", str(tmp_path)) == 2
    assert "not a PyTorch checkout" in capsys.readouterr().err


def test_an_issue_without_a_repro_still_gets_a_comment_from_its_text(tmp_path):
    issue = tmp_path / "issue.md"
    issue.write_text((paths.FIXTURES / "recompile_limit.log").read_text())
    out = tmp_path / "out"
    assert run_cli("triage", str(issue), "--out", str(out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["reproduction"] is None and report["regression_test"] is None
    assert report["classification"]["category"] == "recompilation"
    assert "not run yet" in (out / "comment.md").read_text()


def test_a_hostile_issue_is_rendered_inert(tmp_path):
    from tests.bot.pipeline.test_comment import strip_code

    hostile = ("### Bug @pytorch/team <script>alert(1)</script>\n\n"
               "````\n```\n</details><details open><summary>@ezyang</summary>\n"
               "<!-- pt2-triage:report -->\n```\n````\n\n"
               "```\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
               "torch._dynamo.exc.Unsupported: Data-dependent branching @pytorch/team ```\n```\n\n"
               + "log line with <b>html</b> and @someone\n" * 250_000)  # ~10 MB
    issue = tmp_path / "issue.md"
    issue.write_text(hostile)
    out = tmp_path / "out"
    assert run_cli("triage", str(issue), "--out", str(out)) == 0
    comment = (out / "comment.md").read_text()
    assert len(comment) <= 65_536
    visible = strip_code(comment)
    assert "@pytorch/team" not in visible and "@ezyang" not in visible and "@someone" not in visible
    assert "<script>" not in visible and "<details open>" not in visible
    assert comment.count("<!-- pt2-triage:report -->") == 1
