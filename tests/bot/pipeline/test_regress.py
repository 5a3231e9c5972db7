"""Regression tests generated from repros: what they assert, how they are named, where they go."""
import ast

import pytest

from bot.core.records import Classification
from bot.pipeline.test_patch import add_method_to_file, required_imports, unified_patch
from bot.core.ruleset import load_ruleset
from bot.pipeline.regress import generate, verification_verdict

PLANS = load_ruleset().regression_plans
FAIL = Classification("backend_compiler_failed", 0.98, "backend_compiler_failed|InductorError|CppCompileError")

INJECTED_COMPILE_ERROR = '''import torch
import torch.nn.functional as F

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


class Block(torch.nn.Module):
    def forward(self, x):
        return F.relu(x) + 1


if __name__ == "__main__":
    model = Block()
    compiled = torch.compile(model)
    print(compiled(torch.randn(8)))
'''


def test_matches_eager_compares_compiled_and_eager_on_the_same_hoisted_inputs():
    test = generate(INJECTED_COMPILE_ERROR, FAIL, PLANS["backend_compiler_failed"], device="cpu", issue_number=77)
    body = test.method_source
    assert '@torch._inductor.config.patch("cpp.inject_relu_bug_TESTING_ONLY", \'compile_error\')' in body
    assert "arg0 = torch.randn(8)" in body
    assert body.index("expected = model(arg0)") < body.index("actual = compiled(arg0)")
    assert "self.assertEqual(actual, expected)" in body and "print(" not in body
    assert "import torch.nn.functional as F" in body  # local import: the method pastes anywhere
    assert test.test_name == "test_relu_inductor_compiles_issue_77" and test.class_name == "TestPT2Issue77"
    ast.parse(test.file_source)
    assert test.file_source.rstrip().endswith("run_tests()")
    assert "from torch._inductor.test_case import run_tests, TestCase" in test.file_source


def test_explicit_comparisons_become_assert_equal():
    source = "import torch\nx = torch.randn(4)\ntorch.testing.assert_close(torch.compile(torch.sin)(x), torch.sin(x), atol=1e-3, rtol=0)\n"
    test = generate(source, Classification("accuracy", 0.9, "s"), PLANS["accuracy"], device="cpu", issue_number=None)
    assert "self.assertEqual(torch.compile(torch.sin)(x), torch.sin(x), atol=0.001, rtol=0)" in test.method_source
    assert test.test_name == "test_sin_compiled_matches_eager"


def test_an_allclose_with_one_tolerance_gets_allclose_s_default_for_the_other():
    """TestCase.assertEqual takes both tolerances or neither (fresh_issues_5: `atol=1e-05` alone made
    the generated test raise ValueError instead of failing as the repro does)."""
    source = "import torch\nx = torch.randn(4)\nassert torch.allclose(torch.compile(torch.sin)(x), torch.sin(x), atol=1e-05)\n"
    test = generate(source, Classification("accuracy", 0.9, "s"), PLANS["accuracy"], device="cpu", issue_number=None)
    assert ("self.assertEqual(*torch.broadcast_tensors(torch.compile(torch.sin)(x), torch.sin(x)), rtol=1e-05, atol=1e-05)"
            in test.method_source)
    positional = source.replace("atol=1e-05", "0.001")
    test = generate(positional, Classification("accuracy", 0.9, "s"), PLANS["accuracy"], device="cpu", issue_number=None)
    assert "torch.sin(x)), rtol=0.001, atol=1e-08)" in test.method_source


def test_an_allclose_that_broadcasts_becomes_a_test_that_passes_once_the_values_agree():
    """allclose broadcasts, assertEqual does not: a (1, 16) output against `torch.zeros(1)` (the
    minimized fresh_issues_7 scan) must fail on the values, not on the shapes."""
    source = "import torch\nx = torch.zeros(1, 16)\nassert torch.allclose(torch.compile(torch.sin)(x), torch.zeros(1))\n"
    test = generate(source, Classification("accuracy", 0.9, "s"), PLANS["accuracy"], device="cpu", issue_number=None)
    import torch
    namespace = {"torch": torch}
    body = "\n".join(line[8:] for line in test.method_source.splitlines()[2:])
    exec(body.replace("self.assertEqual", "torch.testing.assert_close"), namespace)  # passes: sin(0) == 0


def test_the_name_takes_the_first_op_in_source_order_not_the_shallowest():
    source = "import torch\n\ndef f(x):\n    return torch.relu(x) * 2 + torch.tanh(x)\n\nx = torch.randn(4)\n" \
             "torch.testing.assert_close(torch.compile(f)(x), f(x))\n"
    test = generate(source, Classification("accuracy", 0.9, "s"), PLANS["accuracy"], device="cpu", issue_number=3)
    assert test.test_name == "test_relu_compiled_matches_eager_issue_3"


def test_graph_breaks_are_named_after_the_break_and_assert_it_compiles():
    source = "import torch\n\n@torch.compile(fullgraph=True)\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\nf(torch.randn(3))\n"
    test = generate(source, Classification("graph_break", 0.9, "s"), PLANS["graph_break"], device="cpu",
                    issue_number=5, graph_break_title="Data-dependent branching")
    assert test.test_name == "test_data_dependent_branching_issue_5" and test.assertion == "no_error"
    assert "from torch._dynamo.test_case import run_tests, TestCase" in test.file_source


def test_cuda_tests_skip_without_a_gpu():
    source = "import torch\ntorch.compile(torch.relu)(torch.randn(4, device='cuda'))\n"
    test = generate(source, FAIL, PLANS["backend_compiler_failed"], device="cuda", issue_number=3)
    assert '@unittest.skipUnless(torch.cuda.is_available(), "requires CUDA")' in test.method_source
    assert "import unittest" in test.file_source
    assert "import unittest" in required_imports(test)


def test_hostile_signature_text_cannot_escape_the_docstring_or_comments():
    evil = Classification("graph_break", 0.9, 'x"""\nimport os; os.system("rm -rf /")  # \n')
    test = generate("import torch\ntorch.compile(torch.relu, fullgraph=True)(torch.ones(1))\n", evil,
                    PLANS["graph_break"], device="cpu", issue_number=1, reference="a\nimport os")
    tree = ast.parse(test.file_source)
    assert not any(isinstance(node, ast.Import) and node.names[0].name == "os" for node in ast.walk(tree))


EXISTING = '''import torch
from torch._dynamo.test_case import run_tests, TestCase


class ReproTests(TestCase):
    def test_old(self):
        pass


if __name__ == "__main__":
    run_tests()
'''


def test_the_method_is_added_to_the_existing_class_with_a_reviewable_patch():
    test = generate(INJECTED_COMPILE_ERROR, FAIL, PLANS["backend_compiler_failed"], device="cuda", issue_number=77)
    after = add_method_to_file(EXISTING, test.method_source, "ReproTests", required_imports(test))
    tree = ast.parse(after)
    repro_tests = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert [f.name for f in repro_tests.body] == ["test_old", test.test_name]
    assert "import unittest" in after and "import torch._inductor.config" in after
    patch = unified_patch("test/dynamo/test_repros.py", EXISTING, after)
    assert patch.startswith("--- a/test/dynamo/test_repros.py\n+++ b/test/dynamo/test_repros.py\n")
    assert all(line.startswith(("+", " ", "@", "-")) for line in patch.splitlines())


def test_adding_to_a_file_without_a_test_class_is_an_error():
    with pytest.raises(ValueError):
        add_method_to_file("x = 1\n", "    def test_x(self):\n        pass\n", None)


@pytest.mark.parametrize("status, run, verdict", [
    ("failed", FAIL, "fails_same"),
    # the same failure, before the ladder re-filed its category
    ("failed", Classification("unknown", 0.5, "unknown|" + FAIL.signature.split("|", 1)[1]), "fails_same"),
    ("failed", Classification("backend_compiler_failed", 0.9, "other"), "fails_similar"),
    ("failed", Classification("not_pt2", 0.9, "NameError"), "fails_differently"),
    ("ok", Classification("not_pt2", 0.9, ""), "passes"),
    ("timeout", Classification("unknown", 0.5, ""), "not_run"),
    ("failed", Classification("unknown", 0.5, "x", exception_type="ModuleNotFoundError"), "not_run"),
])
def test_verification_verdicts(status, run, verdict):
    assert verification_verdict(FAIL, run, status)[0] == verdict


@pytest.mark.slow
def test_the_generated_test_really_fails_against_installed_torch_for_the_same_reason():
    from bot.core.classify import Classifier
    from bot.core.graph_breaks import load_registry
    from bot.pipeline.reproduce import ALWAYS_ENV, output_text
    from bot.core.ruleset import load_ruleset
    from runners import sandbox

    classifier = Classifier(load_ruleset(), load_registry())
    repro = classifier.classify_text(output_text(sandbox.run(sandbox.RunSpec(script=INJECTED_COMPILE_ERROR, env=dict(ALWAYS_ENV)))))
    assert repro.category == "backend_compiler_failed"
    test = generate(INJECTED_COMPILE_ERROR, repro, PLANS[repro.category], device="cpu", issue_number=77)
    result = sandbox.run(sandbox.RunSpec(script=test.file_source, env=dict(ALWAYS_ENV), timeout_s=300))
    verdict, sentence = verification_verdict(repro, classifier.classify_text(output_text(result)), result.status)
    assert result.status == "failed" and verdict == "fails_same", sentence
    assert "test_relu_inductor_compiles_issue_77" in output_text(result)


def test_a_module_made_where_it_is_compiled_is_shared_by_the_eager_and_the_compiled_run():
    """`torch.compile(nn.Linear(32, 1))(fake)`: eager must run the same module (the same weights),
    and the statement that used the compiled call goes on with its result (a held-out WGAN-GP's
    test once compared two differently initialised layers and failed on that, not on the bug)."""
    source = ("import torch\nimport torch.nn as nn\nfake = torch.ones(1, 32, requires_grad=True)\n"
              "grads, = torch.autograd.grad(torch.compile(nn.Linear(32, 1))(fake), fake, create_graph=True)\n"
              "grads.mean().backward()\n")
    test = generate(source, FAIL, PLANS["aot_autograd_failure"], device="cpu", issue_number=None)
    body = test.method_source
    assert "module = nn.Linear(32, 1)" in body
    assert body.index("expected = module(fake)") < body.index("actual = torch.compile(module)(fake)")
    assert "torch.autograd.grad(actual, fake, create_graph=True)" in body
    assert body.count("nn.Linear(32, 1)") == 1
    twice = source.replace("fake = torch.ones(1, 32, requires_grad=True)", "fake = torch.compile(nn.Linear(1, 32))(torch.ones(1))")
    body = generate(twice, FAIL, PLANS["aot_autograd_failure"], device="cpu", issue_number=None).method_source
    assert "module = nn.Linear(1, 32)" in body and "module2 = nn.Linear(32, 1)" in body  # one name each


SIZE_BEFORE_ITS_CLASS = '''import torch
import torch.nn as nn
N_ITEMS = 2000


class Scorer(nn.Module):
    def __init__(self, n_items=N_ITEMS):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n_items))

    def forward(self, x):
        return x + self.bias


model = Scorer()
print(torch.compile(model)(torch.zeros(N_ITEMS)))
'''


def test_a_name_a_definition_reads_when_it_is_defined_stays_before_it():
    """The method puts definitions first, but `n_items=N_ITEMS` is read when the class is defined:
    moved after the class, `N_ITEMS = 2000` made the regression test fail with a NameError of its own
    (fresh_issues_13's AOTInductor report, `fails_differently`)."""
    test = generate(SIZE_BEFORE_ITS_CLASS, FAIL, PLANS["backend_compiler_failed"], device="cpu", issue_number=5)
    body = test.method_source
    assert body.index("N_ITEMS = 2000") < body.index("class Scorer") < body.index("model = Scorer()")
    unneeded = generate(SIZE_BEFORE_ITS_CLASS.replace("n_items=N_ITEMS", "n_items=2000"), FAIL,
                        PLANS["backend_compiler_failed"], device="cpu", issue_number=5).method_source
    assert unneeded.index("class Scorer") < unneeded.index("N_ITEMS = 2000")  # otherwise definitions come first
