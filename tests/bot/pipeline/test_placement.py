"""Which PyTorch test file a regression test goes in: category defaults refined by what the failure touches."""
import pytest

from bot.core.ruleset import load_ruleset
from bot.pipeline.placement import FailureTouches, checkout_file, main_test_class, read_checkout, suggest_test_file

RULESET = load_ruleset()
RULES, NEVER = load_ruleset().test_files.rules, load_ruleset().test_files.never


def suggest(category, checkout=None, **touches):
    return suggest_test_file(RULESET.categories[category], FailureTouches(**touches), RULES, NEVER, checkout)


@pytest.mark.parametrize("category, frames, code, device, expected", [
    ("graph_break", ["torch/_dynamo/variables/higher_order_ops.py"], "", "cpu", "test/dynamo/test_higher_order_ops.py"),
    ("graph_break", [], "torch.cond(pred, f, g, (x,))", "cpu", "test/dynamo/test_higher_order_ops.py"),
    ("graph_break", [], "class F(torch.autograd.Function): ...", "cpu", "test/dynamo/test_autograd_function.py"),
    ("graph_break", [], "x.item()", "cpu", "test/dynamo/test_repros.py"),
    ("backend_compiler_failed", ["torch/_inductor/codegen/triton.py"], "", "cuda", "test/inductor/test_cuda_repro.py"),
    ("backend_compiler_failed", ["torch/_inductor/codegen/cpp.py"], "", "cpu", "test/inductor/test_cpu_repro.py"),
    ("accuracy", [], "", "cpu", "test/inductor/test_cpu_repro.py"),
    ("export_failure", ["torch/export/_trace.py"], "torch.export.export(m, (x,))", "cpu", "test/export/test_export.py"),
    ("aoti_failure", [], "torch._inductor.aoti_compile_and_package(ep)", "cpu", "test/inductor/test_aot_inductor.py"),
    ("aot_autograd_failure", ["torch/_functorch/_aot_autograd/runtime_wrappers.py"], "", "cpu", "test/functorch/test_aotdispatch.py"),
    ("recompilation", [], "torch._dynamo.config.recompile_limit = 2", "cpu", "test/dynamo/test_recompiles.py"),
])
def test_the_most_specific_file_wins(category, frames, code, device, expected):
    assert suggest(category, frames=tuple(frames), code=code, device=device).path == expected


def test_never_test_misc_and_no_test_for_not_pt2_or_performance():
    for category in RULESET.categories:
        found = suggest(category, code="torch.compile(f)")
        assert found is None or found.path != "test/dynamo/test_misc.py"
    assert suggest("not_pt2") is None and suggest("performance") is None


def test_the_suggestion_says_why():
    found = suggest("graph_break", frames=("torch/_dynamo/variables/higher_order_ops.py",))
    assert "higher-order op" in found.reason and found.alternatives


REPROS = '''
import torch
from torch._dynamo.test_case import TestCase, run_tests

class ReproTests(TestCase):
    def test_one(self): torch.relu(x)
    def test_two(self): pass

class Helper:
    pass
'''
FUNCTIONS = '''
import torch

class FunctionTests(torch._dynamo.test_case.TestCase):
    def test_scatter(self): torch.scatter_add(a, 0, i, b); torch.scatter_add(a, 0, i, b)
'''


def test_with_a_checkout_it_confirms_the_file_and_names_the_class(tmp_path):
    (tmp_path / "test/dynamo").mkdir(parents=True)
    (tmp_path / "test/dynamo/test_repros.py").write_text(REPROS)
    checkout = read_checkout(tmp_path, RULESET.categories["graph_break"].test_files)
    found = suggest("graph_break", checkout, code="y = torch.relu(x)\nif y.sum() > 0: pass")
    assert (found.path, found.test_class, found.confirmed) == ("test/dynamo/test_repros.py", "ReproTests", True)


def test_with_a_checkout_missing_files_drop_out_and_matching_ops_decide(tmp_path):
    checkout = {"test/dynamo/test_repros.py": checkout_file("test/dynamo/test_repros.py", REPROS),
                "test/dynamo/test_functions.py": checkout_file("test/dynamo/test_functions.py", FUNCTIONS)}
    found = suggest("graph_break", checkout, code="out = torch.scatter_add(a, 0, idx, b)")
    assert found.path == "test/dynamo/test_functions.py" and "scatter_add" in found.reason
    assert set(found.alternatives) <= set(checkout)


def test_main_test_class_prefers_template_mixins_with_the_most_tests():
    source = "class AOTInductorTestsTemplate:\n    def test_a(self): pass\n    def test_b(self): pass\n" \
             "class AOTInductorTestABICompatibleCpu(TestCase):\n    pass\n"
    assert main_test_class(source) == "AOTInductorTestsTemplate"
