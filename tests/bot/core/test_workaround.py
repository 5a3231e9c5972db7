"""Rewrites that show a limitation's workaround; the README example's rewrite is run with real torch."""
import ast
import re

import pytest

from bot.core import workaround
from runners.sandbox import RunSpec, run
from tests import paths

EXAMPLE = re.search(r"```python\n(.*?)```", (paths.EXAMPLES / "graph_break_fullgraph.md").read_text(), re.S).group(1)


def test_if_else_returns_become_torch_cond_over_the_values_the_branches_read():
    rewrite = workaround.torch_cond(EXAMPLE, line=11)
    assert "return torch.cond(y.sum() > 0, cond_true_branch, cond_false_branch, (y,))" in rewrite.source
    assert "def cond_true_branch(y):\n            return torch.relu(y)" in rewrite.source
    assert "class Gate(torch.nn.Module):" in rewrite.source and "print(compiled(torch.randn(4, 16)))" in rewrite.source


def test_item_is_taken_off_the_predicate_and_the_rest_of_the_function_is_the_else():
    source = "import torch\n\n@torch.compile(fullgraph=True)\ndef f(x):\n    if x.sum().item() > 0:\n        return x + 1\n    y = x * 2\n    return y - 1\n"
    rewritten = workaround.torch_cond(source, line=5).source
    assert "torch.cond(x.sum() > 0, cond_true_branch, cond_false_branch, (x,))" in rewritten
    assert "def cond_false_branch(x):\n        y = x * 2\n        return y - 1" in rewritten
    ast.parse(rewritten)


def test_branches_that_assign_return_what_they_assign():
    source = "def f(x, s):\n    if s.item() > 0:\n        x = x + 1\n    else:\n        x = x - 1\n    return x\n"
    rewritten = workaround.torch_cond(source, line=None).source
    assert "x = torch.cond(s > 0, cond_true_branch, cond_false_branch, (x,))" in rewritten
    assert rewritten.rstrip().endswith("return x")


def test_code_of_another_shape_is_left_alone():
    assert workaround.torch_cond("import torch\nif torch.rand(1) > 0:\n    print(1)\n", line=2) is None  # not in a function
    assert workaround.torch_cond("def f(x):\n    if x:\n        return 1\n    print(x)\n", line=2) is None  # no else value
    assert workaround.torch_cond("def f(:\n", line=1) is None


def test_the_failing_line_is_dynamos_user_code_frame():
    output = (paths.CORPUS / "recorded" / "dynamic_shapes_item.log").read_text()
    assert workaround.failing_line(output) == 8
    assert workaround.failing_line("no frames") is None


def test_newer_torchs_caused_by_place_is_completed_from_the_script_that_ran():
    """torch.export on torch 2.13 names only the place of a data-dependent guard (the path cut short)."""
    script = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        for n in x.tolist():\n            if n == 0:\n                pass\n"
    output = "Could not guard on data-dependent expression Eq(u0, 0)\nCaused by: (andbox/repro.py:5 in forward)\nFor more information"
    completed = workaround.with_caused_by_source(output, script)
    assert "Caused by: if n == 0:  # andbox/repro.py:5 in forward\n" in completed
    assert workaround.failing_line(completed) == 5
    elsewhere = "Caused by: (torch/_refs/__init__.py:3701 in reshape)"  # not the repro: left as it is
    assert workaround.with_caused_by_source(elsewhere, script) == elsewhere
    assert workaround.with_caused_by_source(output.replace(":5 ", ":99 "), script) == output.replace(":5 ", ":99 ")
    assert workaround.with_caused_by_source(output, None) == output


def test_capture_scalar_outputs_goes_after_the_imports_once():
    rewritten = workaround.capture_scalar_outputs("import torch\nimport math\n\nx = 1\n").source
    assert rewritten.split("\n")[:3] == ["import torch", "import math", workaround.CAPTURE_SCALARS]
    assert workaround.capture_scalar_outputs(rewritten) is None


def test_each_documented_switch_goes_after_the_imports_the_same_way():
    rewritten = workaround.config_switch("allow_unspec_int_on_nn_module", "import torch\n\nmodel = M()\n")
    assert rewritten.source.split("\n")[1] == "torch._dynamo.config.allow_unspec_int_on_nn_module = True"
    assert rewritten.kind == "allow_unspec_int_on_nn_module" and "int attribute" in rewritten.note
    assert workaround.config_switch("allow_unspec_int_on_nn_module", rewritten.source) is None


def test_mark_dynamic_becomes_maybe_mark_dynamic_and_nothing_else_changes():
    script = ("import torch\n\nx = torch.randn(2, 6)  # séance\n"
              "torch._dynamo.mark_dynamic(x, 1); torch._dynamo.maybe_mark_dynamic(x, 0)\nfn(x)\n")
    rewritten = workaround.maybe_mark_dynamic(script)
    assert rewritten.source == script.replace("._dynamo.mark_dynamic", "._dynamo.maybe_mark_dynamic")
    assert rewritten.kind == "maybe_mark_dynamic" and "(line 4)" in rewritten.note
    assert workaround.maybe_mark_dynamic(rewritten.source) is None  # nothing left to change
    assert workaround.maybe_mark_dynamic("from torch._dynamo import mark_dynamic\nmark_dynamic(x, 1)\n") is None


# The documented switches the verified limitations of disposition.yaml stand on: (kind, a script
# that fails without it, the line the rewrite adds, the failure's words).
SWITCHES = [
    ("fallback_random",  # inductor_random_numbers
     "import torch\n\n\n@torch.compile\ndef noisy(x):\n    return x + torch.randn_like(x)\n\n\n"
     "x = torch.zeros(64)\ntorch.manual_seed(0)\ncompiled = noisy(x)\ntorch.manual_seed(0)\n"
     "assert torch.equal(compiled, x + torch.randn_like(x)), 'compiled noise differs'\n",
     "torch._inductor.config.fallback_random = True", "compiled noise differs"),
    ("hook_guards",  # hook_added_after_compile
     "import torch\n\nlayer = torch.nn.Linear(2, 2)\nfast = torch.compile(layer, backend='eager')\n"
     "x = torch.ones(2)\nfast(x)\nlayer.register_forward_hook(lambda m, i, o: o * 0)\n"
     "assert torch.equal(fast(x), layer(x)), 'compiled output misses the hook'\n",
     "torch._dynamo.config.skip_nnmodule_hook_guards = False", "misses the hook"),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind,script,line,failure", SWITCHES, ids=[s[0] for s in SWITCHES])
def test_a_documented_switch_makes_its_failure_pass_on_real_torch(kind, script, line, failure):
    assert failure in run(RunSpec(script=script, timeout_s=300)).stderr
    rewritten = workaround.config_switch(kind, script)
    assert rewritten.source.split("\n")[1] == line
    assert workaround.config_switch(kind, rewritten.source) is None  # already set
    result = run(RunSpec(script=rewritten.source, timeout_s=300))
    assert result.status == "ok", result.stderr[-2000:]


FROZEN_THEN_RELOADED = """\
import torch

torch._inductor.config.freezing = True
model = torch.nn.Linear(4, 2).eval()
served = torch.compile(model)
x = torch.ones(1, 4)
with torch.no_grad():
    served(x)
    model.load_state_dict({"weight": torch.zeros(2, 4), "bias": torch.zeros(2)})
    assert torch.equal(served(x), model(x)), "served scores are stale after the reload"
"""


def test_freezing_off_rewrites_the_scripts_own_switch_and_nothing_else():
    assert workaround.freezing_off("import torch\nx = 1\n") is None
    patched = workaround.freezing_off('@torch._inductor.config.patch("freezing", True)\n'
                                      "@config.patch(freezing=True, cpp_wrapper=True)\ndef f(): pass\n")
    assert patched.source == ('@torch._inductor.config.patch("freezing", False)\n'
                              "@config.patch(freezing=False, cpp_wrapper=True)\ndef f(): pass\n")


@pytest.mark.slow
def test_with_freezing_off_weights_loaded_after_compiling_are_seen_on_real_torch():
    """Frozen weights are constants of the compiled code (documented in torch/_inductor/config.py)."""
    assert "stale after the reload" in run(RunSpec(script=FROZEN_THEN_RELOADED, timeout_s=300)).stderr
    rewritten = workaround.freezing_off(FROZEN_THEN_RELOADED)
    assert "freezing = False" in rewritten.source
    result = run(RunSpec(script=rewritten.source, timeout_s=300))
    assert result.status == "ok", result.stderr[-2000:]


def test_the_readme_examples_rewrite_runs_under_fullgraph():
    assert run(RunSpec(script=EXAMPLE, timeout_s=300)).status != "ok"
    result = run(RunSpec(script=workaround.torch_cond(EXAMPLE, line=11).source, timeout_s=300))
    assert result.status == "ok", result.stderr[-2000:]
