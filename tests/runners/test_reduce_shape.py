"""What a PT2 repro keeps while it is reduced: tensor inputs, its entry point, a branch on the input."""
from __future__ import annotations

import ast

import pytest

from runners.reduce import Reducer, reduce_source
from runners.reduce.shape import shape_of, traced_source
from tests.paths import REPROS

LARGE = REPROS / "large"

README_EXAMPLE = '''
import torch


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.proj(x)
        if y.sum() > 0:
            return torch.relu(y)
        return y * 0.5


model = Gate()
compiled = torch.compile(model, fullgraph=True)
print(compiled(torch.randn(4, 16)))
'''

# What the reducer once made of it: the branch tests a constant and the input became an int.
DEGENERATE = '''
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if torch.ones(1):
            pass


torch.compile(Gate(), fullgraph=True)(1)
'''

WHAT_A_MAINTAINER_WRITES = '''
import torch


@torch.compile(fullgraph=True)
def f(x):
    if x.sum() > 0:
        return x
    return -x


f(torch.randn(4))
'''


def shape(source: str):
    return shape_of(ast.parse(source))


def test_the_readme_example_passes_a_tensor_and_branches_on_it():
    facts = shape(README_EXAMPLE)
    assert facts.entry_points == {"compile"} and facts.tensor_input and facts.input_branch and not facts.number_input


def test_an_int_for_the_tensor_and_a_branch_on_a_constant_lose_the_repro():
    facts = shape(DEGENERATE)
    assert facts.number_input and not facts.tensor_input and not facts.input_branch
    assert not shape(README_EXAMPLE).kept_by(facts)


def test_a_plain_function_with_the_same_branch_keeps_it():
    assert shape(README_EXAMPLE).kept_by(shape(WHAT_A_MAINTAINER_WRITES))


def test_a_branch_on_a_name_computed_from_the_input_counts():
    source = WHAT_A_MAINTAINER_WRITES.replace("if x.sum() > 0:", "s = x.sum()\n    t = s * 2\n    if t > 0:")
    assert shape(source).input_branch


def test_a_loop_over_values_computed_from_the_input_makes_its_branch_data_dependent():
    """What an expert loop of a mixture-of-experts does: `n` counts tokens routed from the input."""
    routed = """import torch
def route(x):
    counts = (x > 0).sum(dim=0).tolist()
    for e, n in enumerate(counts):
        if n == 0:
            continue
torch.compile(route, fullgraph=True)(torch.randn(4, 3))
"""
    assert shape(routed).input_branch
    assert not shape(routed.replace("enumerate(counts)", "enumerate(torch.randn(3).tolist())")).input_branch
    assert shape(routed.replace("for e, n in enumerate(counts):", "for n in [c for c in counts]:")).input_branch
    with_as = "import torch\ndef f(x):\n    with g(x) as y:\n        if y:\n            pass\ntorch.compile(f)(torch.ones(1))\n"
    assert shape(with_as).input_branch
    assert shape("import torch\ndef f(x):\n    if (n := x.sum()) > 0:\n        pass\ntorch.compile(f)(torch.ones(1))\n").input_branch

def test_export_example_inputs_are_inputs():
    facts = shape("import torch\nep = torch.export.export(M(), (torch.randn(2, 3), 4))\n")
    assert facts.entry_points == {"export"} and facts.tensor_input and facts.number_input


def test_an_export_example_the_rule_cannot_follow_is_a_tensor_that_may_not_become_a_number():
    """fresh_issues_5: `export(model, (feats,))` with `feats` from a data helper; a candidate
    exported `(1,)` and kept the buffer's failure."""
    original = shape("import torch\nfeats = load()\nep = torch.export.export(M(), (feats,))\n")
    assert original.tensor_input and original.tensor_slots == {0}
    assert not original.kept_by(shape("import torch\nep = torch.export.export(M(), (1,))\n"))
    assert original.kept_by(shape("import torch\nep = torch.export.export(M(), (torch.randn(1),))\n"))
    assert not shape("import torch\ntorch.compile(f)(load())\n").tensor_input  # compile's inputs: as they are


def test_inputs_passed_starred_from_a_written_out_tuple_are_inputs():
    facts = shape("import torch\ninputs = (torch.randn(2), 3)\ntorch.compile(f)(*inputs)\n")
    assert facts.tensor_input and facts.number_input
    assert not shape("import torch\ntorch.compile(f)(*load())\n").tensor_input  # nothing to read


def test_traced_code_that_no_longer_reads_its_input_loses_the_repro():
    """A peer reduced an export whose reshape specializes the batch to a forward that ignores its
    input, exported with `torch.randn(0)`: torch.export then specializes the size-0 batch itself."""
    original = """import torch
from torch.export import Dim
class Tagger(torch.nn.Module):
    def forward(self, images):
        return images.reshape(4, -1)
torch.export.export(Tagger(), (torch.randn(4, 8),), dynamic_shapes={'images': {0: Dim('batch')}})
"""
    ignored = original.replace("return images.reshape(4, -1)", "pass").replace("torch.randn(4, 8)", "torch.randn(0)")
    assert shape(original).input_read and not shape(ignored).input_read
    assert not shape(original).kept_by(shape(ignored))
    library_layer = "import torch\ntorch.export.export(torch.nn.Linear(8, 1), (torch.randn(4, 8),))\n"
    assert shape(library_layer).input_read  # code the file does not show reads its input as far as we know
    assert shape(original).kept_by(shape(library_layer))


def test_naming_the_input_or_assigning_over_it_is_not_reading_it():
    """What reductions made of the rule's first form: `images` alone on a line, `x = 0.0` in the branch."""
    reads = "import torch\ndef f(x):\n    return x + 1\ntorch.compile(f)(torch.ones(1))\n"
    assert shape(reads).input_read
    assert not shape(reads.replace("return x + 1", "x\n    return 1")).input_read
    assert not shape(reads.replace("return x + 1", "x = 0.0")).input_read
    assert not shape(reads.replace("return x + 1", "y = x")).input_read  # a copy nothing computes with
    assert not shape(reads.replace("return x + 1", "x = x")).input_read
    assert not shape(reads.replace("return x + 1", "y = x\n    y.reshape")).input_read  # a lookup, no call
    assert shape(reads.replace("return x + 1", "print(x)")).input_read
    assert shape(reads.replace("return x + 1", "y = x\n    return y * 2")).input_read  # the copy is used
    # unpacking it into names nothing reads does nothing with it either
    assert not shape(reads.replace("return x + 1", "b, t = x.shape\n    return 1")).input_read
    assert shape(reads.replace("return x + 1", "b, t = x.shape\n    return b")).input_read
    assert not shape(reads.replace("return x + 1", "b, t = x.shape\n    t\n    return 1")).input_read  # named alone
    assert shape(reads.replace("return x + 1", "self.seen = x.mean()")).input_read  # a call: it computes


def test_a_module_compiled_through_eval_is_the_module_for_the_read_rule():
    source = """import torch
class Classifier(torch.nn.Module):
    def forward(self, images):
        print()
torch.compile(Classifier().eval(), fullgraph=True)(torch.ones(1))
"""
    assert not shape(source).input_read
    assert shape(source.replace("print()", "print(images)")).input_read


def test_a_module_compiled_through_eval_is_the_module_for_the_branch_rule_too():
    """`graph_break_data_branch` compiles `KeywordSpotter().eval()`; its branch on the input went
    unseen, and the minimized repro became `if torch.ones(1):` on an unused input."""
    assert shape(README_EXAMPLE.replace("model = Gate()", "model = Gate().eval()")).input_branch


def test_the_module_handed_to_the_entry_point_must_read_its_input_itself():
    """A peer kept a `Backbone` whose `forward` reads its `x` while the exported model's `forward`
    returned constants: the submodule's read says nothing of the model's."""
    source = """import torch
class Backbone:
    def forward(x):
        0(x)
class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        Backbone()
    def forward(self, images):
        return 0
torch.export.export(Detector().eval(), (torch.rand(0),))
"""
    assert not shape(source).input_read
    assert shape(source.replace("return 0", "return images")).input_read


def test_dropping_the_entry_point_loses_the_repro():
    assert not shape(WHAT_A_MAINTAINER_WRITES).kept_by(shape("import torch\ndef f(x):\n    if x.sum() > 0:\n        return x\nf(torch.randn(4))\n"))


def test_code_without_an_entry_point_keeps_nothing_in_particular():
    assert shape("def f(x):\n    if x:\n        return 1\n").kept_by(shape("pass\n"))


def test_the_reducer_never_trades_the_input_or_the_branch_for_a_smaller_failure():
    """A predicate that only needs `fullgraph=True` and a compiled call would accept DEGENERATE (and
    less); the reducer still keeps a tensor going into compiled code that branches on it."""
    result = reduce_source(README_EXAMPLE, lambda source: "fullgraph=True" in source and "torch.compile" in source)
    facts = shape(result.source)
    assert facts.tensor_input and facts.input_branch and not facts.number_input, result.source
    assert result.stats.shape_changes_skipped > 0
    assert len(result.source.splitlines()) < len(README_EXAMPLE.strip().splitlines())



def test_a_failure_no_branch_causes_need_not_keep_one():
    """An Inductor C++ error found in a model with an `if` (categories.yaml: no `minimize_branch`)."""
    predicate = lambda source: "fullgraph=True" in source and "torch.compile" in source  # noqa: E731
    result = reduce_source(README_EXAMPLE, predicate, keep_branch=False)
    facts = shape(result.source)
    assert facts.tensor_input and not facts.input_branch, result.source


def test_a_branch_in_code_the_compiler_no_longer_traces_does_not_count():
    uncompiled = "import torch\ndef forward(x):\n    if x.sum():\n        pass\ntorch.compile(fullgraph=True)(torch.randn(2))\n"
    facts = shape(uncompiled)
    assert facts.tensor_input and not facts.input_branch
    assert not shape(README_EXAMPLE).kept_by(facts)


def test_helpers_the_compiled_code_calls_are_traced_too():
    source = ("import torch\ndef gate(y):\n    if y.sum() > 0:\n        return y\n    return -y\n"
              "def f(x):\n    return gate(x * 2)\ntorch.compile(f)(torch.randn(3))\n")
    assert shape(source).input_branch


def test_a_branch_in_a_submodule_the_compiled_module_builds_counts():
    source = (LARGE / "transformer_item_branch.py").read_text()
    facts = shape(source)
    assert facts.tensor_input and facts.input_branch  # Block.forward's `if score.item() > 0.5`, built by a ModuleList


DIM_EXPORT = '''
import torch
from torch.export import Dim


class Tagger(torch.nn.Module):
    def forward(self, images):
        return images.reshape(-1, 16)


images = torch.randn(4, 8, 8)
torch.export.export(Tagger(), (images,), dynamic_shapes={"images": {0: Dim("batch")}})
'''


def test_a_dynamic_dimension_may_not_shrink_to_the_sizes_pt2_specializes_by_design():
    original = shape_of(ast.parse(DIM_EXPORT))
    assert not original.zero_one_dynamic
    for size in ("0", "1"):
        candidate = shape_of(ast.parse(DIM_EXPORT.replace("torch.randn(4, 8, 8)", f"torch.randn({size})")))
        assert candidate.zero_one_dynamic and not original.kept_by(candidate)
    static_dim_shrunk = shape_of(ast.parse(DIM_EXPORT.replace("torch.randn(4, 8, 8)", "torch.randn(4, 1)")))
    assert original.kept_by(static_dim_shrunk)


def test_mark_dynamic_and_positional_dynamic_shapes_count_too():
    marked = "import torch\nx = torch.randn(2, 1)\ntorch._dynamo.mark_dynamic(x, {dims})\ntorch.compile(torch.nn.Linear(1, 1))(x)\n"
    assert not shape_of(ast.parse(marked.format(dims="0"))).zero_one_dynamic
    assert shape_of(ast.parse(marked.format(dims="1"))).zero_one_dynamic
    assert shape_of(ast.parse(marked.format(dims="[0, -1]"))).zero_one_dynamic
    positional = DIM_EXPORT.replace('{"images": {0: Dim("batch")}}', '(( Dim("batch"), None, None),)')
    assert not shape_of(ast.parse(positional)).zero_one_dynamic
    assert shape_of(ast.parse(positional.replace("torch.randn(4, 8, 8)", "torch.zeros((1, 8, 8))"))).zero_one_dynamic
    unknown = DIM_EXPORT.replace("torch.randn(4, 8, 8)", "torch.randn(n, 8, 8)")
    assert not shape_of(ast.parse(unknown)).zero_one_dynamic  # sizes not written as numbers: nothing to say


def test_an_original_that_already_uses_size_one_keeps_its_freedom():
    original = shape_of(ast.parse(DIM_EXPORT.replace("torch.randn(4, 8, 8)", "torch.randn(1, 8, 8)")))
    assert original.zero_one_dynamic
    assert original.kept_by(shape_of(ast.parse(DIM_EXPORT.replace("torch.randn(4, 8, 8)", "torch.randn(0)"))))


SELF_REBOUND = """import torch
class Potential(torch.nn.Module):
    def forward(self, positions):
        positions = positions.requires_grad_(True)
        energy = (positions ** 2).sum()
        return energy
positions = torch.randn(8, 3)
positions = positions.float()
model = Potential()
model = model.eval()
torch.export.export(model, (positions,))
"""


def test_a_name_rebound_to_a_method_call_on_itself_is_followed_a_bounded_way():
    """`x = x.requires_grad_()` binds a name to a call on itself (a real held-out report's force
    field: the shape rule recursed until Python's limit and the triage died in minimize)."""
    facts = shape(SELF_REBOUND)
    assert facts.entry_points == {"export"} and facts.tensor_input  # `positions.float()` is read as its randn
    # a cycle between two names ends too
    assert not shape("import torch\na = b.float()\nb = a.float()\ntorch.compile(f)(a)\n").tensor_input
    result = reduce_source(SELF_REBOUND, lambda source: "torch.export.export" in source and "** 2" in source)
    assert "** 2" in result.source and result.stats.tokens_after < result.stats.tokens_before


def test_a_leap_keeps_what_is_joined_from_it():
    """The hoist replays a sampler's recorded calls: `model(torch.randn(16, 32), 80.0)` where the
    script passed `s_cur` from a list. The search goes on from the leap, so the leap itself, and a
    candidate that only drops one of its calls, keep the joined shape (a held-out report's
    diffusion sampler once stopped at 55 of 69 lines: 706 candidates refused, none run)."""
    from runners.reduce.shape import joined

    original = shape("""import torch
def sample(denoiser, sigmas):
    x = torch.randn(16, 32)
    for s in sigmas:
        x = denoiser(x, s)
model = torch.compile(Denoiser())
sample(model, schedule())
""")
    leap_source = ("import torch\nmodel = torch.compile(Denoiser())\nmodel(torch.randn(16, 32), 80.0)\n"
                   "model(torch.randn(16, 32), 57.5)\n")
    kept = joined(original, shape(leap_source))
    assert kept.tensor_input and kept.kept_by(shape(leap_source))
    assert kept.kept_by(shape(leap_source.replace("model(torch.randn(16, 32), 57.5)\n", "")))


def test_a_number_passed_beside_a_tensor_does_not_let_the_tensor_become_a_number():
    """`model(x, sigma)`: the float at position 1 is the original's, but a candidate passing `1` for
    `x` has turned a tensor into an int (what the reducer made of the sampler before this rule)."""
    original = shape("import torch\nmodel = torch.compile(f)\nmodel(torch.randn(16, 32), 80.0)\n")
    assert original.tensor_input and original.number_input
    assert original.kept_by(shape("import torch\nmodel = torch.compile(f)\nmodel(torch.ones(1), 1.0)\n"))
    assert not original.kept_by(shape("import torch\nmodel = torch.compile(f)\nmodel(1, 1.0)\nmodel(torch.ones(1), 2.0)\n"))


def test_a_leaps_size_one_in_a_dynamic_dimension_is_the_originals_own():
    """fresh_issues_4's export: `image.unsqueeze(0)` under `Dim("batch")`, recorded as
    `torch.randn(1, 8, 8)`. The hoisted export is admitted and what follows it may keep size 1; a
    candidate of the original's own search still may not introduce it."""
    from runners.reduce.shape import joined

    original = shape(DIM_EXPORT.replace("torch.randn(4, 8, 8)", "load_image(path).unsqueeze(0)"))
    leap = DIM_EXPORT.replace("torch.randn(4, 8, 8)", "torch.randn(1, 8, 8)")
    assert not original.zero_one_dynamic and shape(leap).zero_one_dynamic
    assert joined(original, shape(leap)).kept_by(shape(leap))
    seen = []
    Reducer(lambda source: seen.append(source) or False).reduce(
        DIM_EXPORT.replace("torch.randn(4, 8, 8)", "load_image(path).unsqueeze(0)"), leaps=[leap], known_interesting=True)
    assert leap in seen  # run, not refused as a change of shape


def test_a_method_compiled_through_self_is_read_like_a_function():
    """`torch.compile(self._predict_impl)` in `__init__`: once unknown (so taken to read its input),
    which refused the candidate that made the class plain functions, where the same code is known."""
    predictor = """import torch
class Predictor:
    def __init__(self):
        self._predict = torch.compile(self._predict_impl, fullgraph=True)
    def _predict_impl(self, tokens):
        return torch.randn(2)
    def __call__(self, tokens):
        return self._predict(tokens)
Predictor()(torch.ones(2))
"""
    assert not shape(predictor).input_read
    assert shape(predictor.replace("return torch.randn(2)", "return tokens * 2")).input_read
    two_classes = predictor + "class Other:\n    def _predict_impl(self, x):\n        return x\n"
    assert shape(two_classes).input_read  # which one is meant is unknown: taken to read it


MODULE_WITH_DROPOUT = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return scaled(self.drop(x))


def scaled(y):
    return y * 2


def make_batch():
    return torch.randn(4, 8)


out = torch.compile(Net())(make_batch())
'''


def test_the_traced_source_is_the_compiled_module_whole_and_what_it_calls_not_how_inputs_are_made():
    traced = traced_source(MODULE_WITH_DROPOUT)
    assert "nn.Dropout(0.1)" in traced and "def scaled" in traced  # __init__ builds what forward runs
    assert "torch.randn" not in traced and "make_batch" not in traced


@pytest.mark.parametrize("opaque", [
    "import torch, torchvision\nm = torchvision.models.resnet18()\ntorch.compile(m)(torch.randn(1, 3, 8, 8))\n",
    "import torch\ndef f(x):\n    return x + torch.rand_like(x)\ntorch.compile(backend='eager')(f)(torch.ones(2))\n",
    "import torch\ndef f(x:\n",
])
def test_the_traced_source_is_the_whole_script_when_the_file_does_not_show_what_is_traced(opaque):
    assert traced_source(opaque) == opaque


EXPORTED_FROM_A_HELPER = '''import torch


def tokenize(texts):
    return torch.tensor([[len(t)] for t in texts])


torch.export.export(torch.nn.Linear(1, 1), (tokenize(["a b"]),))
'''


def test_an_exported_example_stays_a_tensor_not_a_helper_emptied_to_pass_or_an_empty_list():
    original = shape_of(ast.parse(EXPORTED_FROM_A_HELPER))
    assert original.tensor_input
    emptied = EXPORTED_FROM_A_HELPER.replace("    return torch.tensor([[len(t)] for t in texts])", "    pass")
    assert not original.kept_by(shape_of(ast.parse(emptied)))
    for empty in ("[]", "()", "{}", "[None, 1]"):
        assert not original.kept_by(shape_of(ast.parse(EXPORTED_FROM_A_HELPER.replace('tokenize(["a b"])', empty)))), empty
    listed = EXPORTED_FROM_A_HELPER.replace('tokenize(["a b"])', '[tokenize(["a b"])]')
    assert original.kept_by(shape_of(ast.parse(listed)))  # a list of tensors is an example of tensors
    opaque = EXPORTED_FROM_A_HELPER.replace("    return torch.tensor([[len(t)] for t in texts])", "    return load(texts)")
    assert original.kept_by(shape_of(ast.parse(opaque)))  # what the helper returns is unknown: it counts as a tensor


def test_names_imported_from_torch_are_read_as_written_out():
    """fresh_issues_9's export and AOTI reports call `export` imported from torch.export: no entry
    point or example was seen, and their repros exported `((),)` and `(1, 1, 1)` for tensors."""
    original = shape("from torch.export import export\nexample = make(8)\nep = export(M(), (example,))\n")
    assert original.entry_points == {"export"} and original.tensor_slots == {0}
    assert not original.kept_by(shape("from torch.export import export\nep = export(M(), ((),))\n"))
    aoti = ("import torch\nfrom torch.export import export as trace\n"
            "torch._inductor.aoti_compile_and_package(trace(M(), load_customers(16)), package_path=p)\n")
    assert shape(aoti).tensor_slots == {0}  # a tuple the rule cannot see into is an example to it
    assert not shape(aoti).kept_by(shape(aoti.replace("load_customers(16)", "(1, 1, 1)")))
    assert shape(aoti).kept_by(shape(aoti.replace("load_customers(16)", "(torch.ones(1),)")))
    assert shape("from torch import compile\ncompile(f)(torch.ones(2))\n").tensor_input
    helper = ("import torch\n\ndef load_customers(n):\n    return (torch.randn(n, 9) * 3, torch.randint(12, (n,)))\n\n\n"
              "torch.export.export(M(), load_customers(16))\n")
    assert shape(helper).tensor_slots == {0, 1}  # the helper's written-out tuple is read
    assert not shape(helper).kept_by(shape(helper.replace("torch.randn(n, 9) * 3", "1")))
    emptied = "import torch\ntorch.export.export(M(), (torch.ones(1), ()))\n"
    assert not shape(helper).kept_by(shape(emptied))  # nor an empty tuple in a tensor's place
    assert not shape("x = compile('1', 'f', 'eval')\n").entry_points  # Python's own compile


def test_a_helpers_parameter_returned_as_an_example_is_read_as_the_call_passes_it():
    """fresh_issues_9's AOTI repro ended exporting `load_customers(1)` returning
    `(torch.ones(1), n, ...)`: an int in a tensor's place, which the rule saw only as the name `n`."""
    helper = ("import torch\n\ndef load_customers(n):\n    return (torch.randn(n, 9), torch.randint(12, (n,)))\n\n\n"
              "torch.export.export(M(), load_customers(16))\n")
    original = shape(helper)
    assert not original.kept_by(shape(helper.replace("torch.randint(12, (n,))", "n")))  # 16 in a tensor's place
    assert original.kept_by(shape(helper.replace("torch.randint(12, (n,))", "torch.ones(n)")))
    keyword = helper.replace("load_customers(16)", "load_customers(n=torch.ones(2))").replace("torch.randint(12, (n,))", "n")
    assert original.kept_by(shape(keyword))  # a tensor passed through the parameter is still a tensor
    rebound = helper.replace("    return", "    n = torch.ones(n)\n    return").replace("torch.randint(12, (n,))", "n")
    assert original.kept_by(shape(rebound))  # a parameter the helper rebinds is not the call's argument


def test_the_module_torch_export_is_not_an_entry_point_its_export_function_is():
    """A repro whose export fails kept `torch.export.load()` after it: it was the last mention of
    the module, and the module counted as the entry point."""
    assert shape("import torch\ntorch.export.save(ep, p)\ntorch.export.load(p)\n").entry_points == set()
    original = shape("import torch\nep = torch.export.export(M(), (x,))\ntorch.export.load(p)\n")
    assert original.kept_by(shape("import torch\nep = torch.export.export(M(), (x,))\n"))
