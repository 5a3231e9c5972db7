"""Taking modules apart: a constant attribute read in place, a stateless module as a plain function, a
layer dropped with its calls."""
from __future__ import annotations

import ast
import copy

from runners.reduce import Reducer
from runners.reduce.base import format_source
from runners.reduce.modules import attribute_edits, default_edits, function_edits, layer_edits
from tests.runners.test_reduce import prints

ROUTER = """\
import torch


class Router(torch.nn.Module):
    def __init__(self, capacity=0.5, scale=2):
        super().__init__()
        self.capacity = capacity
        self.scale = scale
        self.bias = -1

    def forward(self, x):
        if x.max().item() > self.capacity:
            return x * self.scale + self.bias
        return x


torch.compile(Router(scale=3), fullgraph=True)(torch.ones(2))
"""


def applied(source: str, make_edits) -> list[tuple[str, str]]:
    """(pass name, the program) for each edit the pass offers on `source`."""
    tree = ast.parse(source)
    found = []
    for name, edit in make_edits(tree):
        candidate = copy.deepcopy(tree)
        assert edit(candidate)
        found.append((name, format_source(candidate)))
    return found


def test_an_attribute_holding_one_constant_is_read_as_that_constant():
    candidates = [program for _, program in applied(ROUTER, attribute_edits)]
    assert len(candidates) == 3  # capacity (its default), scale (what the one call gives), bias (a literal)
    by_default, by_call, literal = candidates
    assert "> 0.5:" in by_default and "self.capacity" not in by_default
    assert "x * 3" in by_call and "self.scale" not in by_call
    assert "+ -1" in literal and "self.bias" not in literal


def test_an_attribute_is_left_alone_when_its_value_is_not_one_constant():
    two_calls = ROUTER + "Router(scale=4)(torch.ones(2))\n"
    assert not any("x * " in p and "self.scale" not in p for _, p in applied(two_calls, attribute_edits))
    set_again = ROUTER.replace("        return x\n\n\n", "        self.bias = 0\n        return x\n\n\n")
    assert not any("self.bias" not in p for _, p in applied(set_again, attribute_edits))
    read_outside = ROUTER + "print(Router().capacity)\n"
    assert not any("> 0.5:" in p for _, p in applied(read_outside, attribute_edits))
    tensor = ROUTER.replace("self.bias = -1", "self.bias = torch.zeros(1)")
    assert not any("self.bias" not in p for _, p in applied(tensor, attribute_edits))


GATE = """\
import torch


class Gate(torch.nn.Module):
    \"\"\"Zero the input when it is all negative.\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.sum() > 0:
            return x
        return x * 0


model = Gate().eval()
torch.compile(model, fullgraph=True)(torch.ones(2))
"""


def test_a_module_without_state_becomes_a_function():
    (name, program), = applied(GATE, function_edits)
    assert name == "functions"
    assert "def gate(x):" in program and "class" not in program and "model = gate\n" in program


def test_a_module_with_state_or_arguments_stays_a_module():
    reads_self = GATE.replace("return x * 0", "return x * self.scale")
    assert applied(reads_self, function_edits) == []
    with_layer = GATE.replace("super().__init__()", "super().__init__()\n        self.fc = torch.nn.Linear(2, 2)")
    assert applied(with_layer, function_edits) == []
    given_arguments = GATE.replace("Gate().eval()", "Gate(2)")
    assert applied(given_arguments, function_edits) == []
    exported = GATE.replace("torch.compile(model, fullgraph=True)(torch.ones(2))",
                            "torch.export.export(model, (torch.ones(2),))")
    assert applied(exported, function_edits) == []  # torch.export takes modules only


def test_a_stateless_layer_of_an_exported_model_becomes_a_function_read_in_place():
    source = GATE.replace("model = Gate().eval()\ntorch.compile(model, fullgraph=True)(torch.ones(2))\n", """\
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, x):
        return self.gate(x) + 1


torch.export.export(Net().eval(), (torch.ones(2),))
""")
    (_, as_function), = applied(source, function_edits)
    assert "def gate(x):" in as_function and "self.gate = gate" in as_function and "class Net" in as_function
    (_, read_in_place), = applied(as_function, attribute_edits)
    assert "return gate(x) + 1" in read_in_place and "self.gate" not in read_in_place


def test_a_configured_layer_reduces_to_a_function_with_its_constants_inside():
    source = ("class Scale:\n    def __init__(self, factor=3, offset=1):\n        self.factor = factor\n"
              "        self.offset = offset\n\n    def forward(self, x):\n        return x * self.factor + self.offset\n\n"
              "    def __call__(self, x):\n        return self.forward(x)\n\n\nprint(Scale()(5))\n")
    assert prints("16\n")(source)
    result = Reducer(prints("16\n")).reduce(source)
    assert "self.factor" not in result.source and "self.offset" not in result.source, result.source
    assert result.stats.passes.get("attributes") == 2


def test_a_parameter_every_call_leaves_at_one_literal_is_put_in_place():
    source = ("import torch\n\n\nclass Tagger(torch.nn.Module):\n    def __init__(self, dim=16, tags=1):\n"
              "        super().__init__()\n        self.head = torch.nn.Linear(dim, tags)\n\n\n"
              "def make(width, depth=2):\n    return Tagger(tags=3), width * depth\n\n\nmake(8)\nmake(8, 2)\n")
    offered = applied(source, default_edits)
    assert {name for name, _ in offered} == {"defaults"}
    candidates = [program for _, program in offered]
    assert len(candidates) == 4
    dim, tags, width, depth = candidates
    assert "Linear(16, tags)" in dim and "def __init__(self, tags=1)" in dim
    assert "Linear(dim, 3)" in tags and "Tagger()" in tags  # the keyword goes from the call too
    assert "def make(depth=2)" in width and "return (Tagger(tags=3), 8 * depth)" in width and "make()\nmake(2)" in width
    assert "def make(width)" in depth and "make(8)\nmake(8)" in depth
    assert len(applied(source.replace("make(8, 2)", "make(8, 3)"), default_edits)) == 3  # depth 2 and 3: not one literal


def test_an_unread_forward_parameter_goes_with_its_example_input_and_dynamic_shape():
    """`forward(self, positions, species)` with `species` unread, exported with both inputs: the
    parameter goes together with its example input and its `dynamic_shapes` entry (a held-out force
    field's repro kept `species` and a `torch.ones(1)` for it)."""
    from runners.reduce.rewrites import parameter_edits

    source = ("import torch\nclass Pair(torch.nn.Module):\n    def forward(self, positions, species):\n"
              "        return positions.sum()\n"
              "torch.export.export(Pair(), (torch.ones(3), torch.ones(2)), "
              "dynamic_shapes={'positions': None, 'species': None})\n")
    dropped = [program for _, program in applied(source, parameter_edits)]
    assert len(dropped) == 1
    assert "def forward(self, positions):" in dropped[0]
    assert "(torch.ones(3),), dynamic_shapes={'positions': None})" in dropped[0]
    not_written_out = ast.parse(source.replace("(torch.ones(3), torch.ones(2))", "inputs"))
    assert not any(edit(copy.deepcopy(not_written_out)) for _, edit in parameter_edits(not_written_out))


def test_an_unread_forward_parameter_goes_with_its_example_under_an_imported_export():
    """fresh_issues_9's AOTI report exports with `export` imported from torch.export: its unread
    `numeric` and `plan_id` stayed, handed numbers, because the call was not seen as an export."""
    from runners.reduce.rewrites import parameter_edits

    source = ("import torch\nfrom torch.export import export\nclass Churn(torch.nn.Module):\n"
              "    def forward(self, numeric, region):\n        return region.sum()\n"
              "export(Churn(), (torch.ones(3), torch.ones(2)))\n")
    dropped = [program for _, program in applied(source, parameter_edits)]
    assert len(dropped) == 1 and "def forward(self, region):" in dropped[0]
    assert "export(Churn(), (torch.ones(2),))" in dropped[0]
    other = ast.parse(source.replace("from torch.export import export\n", "from mylib import export\n"))
    assert not any(edit(copy.deepcopy(other)) for _, edit in parameter_edits(other))  # another library's export


TIED = """\
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(31, 8)
        self.mix = nn.Linear(8, 8)
        self.tags = nn.Linear(8, 3)
        self.head = nn.Linear(8, 31)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        h = self.mix(self.mix(self.emb(ids)))
        return self.tags(h), self.head(h)


runner = torch._inductor.aoti_load_package(torch._inductor.aoti_compile_and_package(
    torch.export.export(Tagger(), (torch.randint(31, (1, 4)),))))
runner.load_constants(Tagger().state_dict(), check_full_update=True)
"""


def test_a_layer_goes_with_its_calls_in_one_edit():
    """The package's `load_constants` names the first key it does not know: dropping `self.tags(h)`
    alone would name `tags.bias` instead, so the layer and its calls go together."""
    programs = [program for _, program in applied(TIED, layer_edits)]
    dropped = {layer: program for program in programs for layer in ("emb", "mix", "tags", "head")
               if f"self.{layer}" not in program}
    assert len(programs) == 2 and set(dropped) == {"mix", "tags"}  # emb and head are read as more than a call
    assert "self.tags" not in dropped["tags"] and "return (h, self.head(h))" in dropped["tags"]
    assert "self.mix" not in dropped["mix"] and "h = self.emb(ids)" in dropped["mix"]  # nested calls too


def test_a_layer_read_otherwise_than_called_on_one_argument_stays():
    for changed in ("return self.tags(h, h), self.head(h)", "return self.tags(h), self.head(h), self.tags.weight",
                    "return self.tags(input=h), self.head(h)"):
        source = TIED.replace("return self.tags(h), self.head(h)", changed)
        assert not any("self.tags" not in program for _, program in applied(source, layer_edits)), changed
    read_outside = TIED + "print(Tagger().tags)\n"
    assert not any("self.tags" not in program for _, program in applied(read_outside, layer_edits))
