"""Hoisting: programs that compile one of the script's modules alone, from what an eager run recorded."""
from __future__ import annotations

import ast

from runners.reduce import reduce_source
from runners.reduce.hoist import hoisted_programs

SCRIPT = """\
from dataclasses import dataclass
import torch
import torch.nn as nn


@dataclass
class Config:
    dim: int = 8
    heads: int = 2


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)

    def forward(self, x, mask):
        if mask.any():
            x = x + 1
        return self.qkv(x)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(10, cfg.dim)
        self.attn = Attention(cfg)

    def forward(self, tokens, mask):
        return self.attn(self.embed(tokens), mask)


def main():
    torch.manual_seed(0)
    cfg = Config(dim=16)
    model = Encoder(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print("eager:", model(torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 5, dtype=torch.bool)).shape)
    compiled = torch.compile(model, fullgraph=True)
    for _ in range(3):
        compiled(torch.randint(0, 10, (2, 5)), torch.zeros(2, 5, dtype=torch.bool)).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def config(dim=16):
    return {"dataclass": "Config", "fields": {"dim": {"value": dim}, "heads": {"value": 2}}}


def tensor(*shape, dtype="float32", grad=False):
    return {"tensor": list(shape), "dtype": dtype, "device": "cpu", "grad": grad}


# what the probe records for SCRIPT: its classes in the order of their first call
RECORDS = [
    {"class": "Encoder", "init": [config()], "init_kw": {}, "call": [tensor(2, 5, dtype="int64"), tensor(2, 5, dtype="bool")]},
    {"class": "Attention", "init": [config()], "init_kw": {}, "call": [tensor(2, 5, 16, grad=True), tensor(2, 5, dtype="bool")]},
]


def test_the_innermost_module_compiled_alone_comes_first():
    programs = hoisted_programs(ast.parse(SCRIPT), RECORDS)
    assert len(programs) == 2
    inner = programs[0]
    # the entry point as the user wrote it, on fresh tensors of the recorded shapes; only the
    # dataclass field the script changed is written out
    assert inner.splitlines()[-1] == ("torch.compile(Attention(Config(dim=16)), fullgraph=True)"
                                      "(torch.randn(2, 5, 16, requires_grad=True), torch.zeros(2, 5, dtype=torch.bool))")
    # set-up the call does not need is gone: the outer model and what uses it (the optimizer, the
    # eager check, the loop), and the definitions only they used
    assert "torch.manual_seed(0)" in inner
    for gone in ("class Encoder", "def main", "SGD", "eager:", "__main__"):
        assert gone not in inner
    assert "Encoder(Config(dim=16))" in programs[1]


def test_an_export_keeps_its_keywords_but_not_the_originals_dynamic_shapes():
    script = SCRIPT.replace("compiled = torch.compile(model, fullgraph=True)",
                            "compiled = torch.export.export(model, (x, m), strict=False, dynamic_shapes=shapes)")
    program = hoisted_programs(ast.parse(script), RECORDS)[0]
    assert program.splitlines()[-1] == ("torch.export.export(Attention(Config(dim=16)), (torch.randn(2, 5, 16, "
                                        "requires_grad=True), torch.zeros(2, 5, dtype=torch.bool)), strict=False)")


def test_an_export_keeps_dynamic_shapes_written_out_from_names_the_set_up_binds():
    """`Dim("batch")` on an example of size 1 may be the failure (export's 0/1 specialization)."""
    script = "from torch.export import Dim\n" + SCRIPT.replace(
        "compiled = torch.compile(model, fullgraph=True)",
        "batch = Dim('batch')\n    compiled = torch.export.export(model, (x, m), dynamic_shapes={'x': {0: batch}, "
        "'mask': {0: Dim('b')}})")
    program = hoisted_programs(ast.parse(script), RECORDS)[0]
    assert "\nbatch = Dim('batch')\n" in program, program
    assert program.splitlines()[-1].endswith("dynamic_shapes={'x': {0: batch}, 'mask': {0: Dim('b')}})"), program


def test_an_early_return_before_the_entry_point_does_not_cost_the_set_up():
    """The run reached the entry, so `if not cfg.export: return` did not return; the names bound
    before and after it stay (here the `Dim` the export's dynamic_shapes read)."""
    script = "from torch.export import Dim\n" + SCRIPT.replace(
        "compiled = torch.compile(model, fullgraph=True)",
        "if not cfg.dim:\n        return\n    batch = Dim('batch')\n"
        "    compiled = torch.export.export(model, (x, m), dynamic_shapes={'x': {0: batch}, 'mask': None})")
    program = hoisted_programs(ast.parse(script), RECORDS)[0]
    assert "\nbatch = Dim('batch')\n" in program and "cfg.dim:" not in program, program


def test_an_export_the_original_packages_with_aotinductor_is_packaged_too():
    script = SCRIPT.replace("compiled = torch.compile(model, fullgraph=True)",
                            "compiled = torch._inductor.aoti_compile_and_package(torch.export.export(model, (x, m)), "
                            "package_path=path, inductor_configs={'max_autotune': True})")
    program = hoisted_programs(ast.parse(script), RECORDS)[0]
    assert program.splitlines()[-1] == (
        "torch._inductor.aoti_compile_and_package(torch.export.export(Attention(Config(dim=16)), (torch.randn(2, 5, 16, "
        "requires_grad=True), torch.zeros(2, 5, dtype=torch.bool))), inductor_configs={'max_autotune': True})")


def test_entry_points_imported_by_name_are_hoisted_as_the_script_calls_them():
    """fresh_issues_9's export and AOTI reports call `export` imported from torch.export: no leap
    was offered, as the file seemed to have no entry point."""
    script = "from torch.export import export\n" + SCRIPT.replace(
        "compiled = torch.compile(model, fullgraph=True)",
        "compiled = torch._inductor.aoti_compile_and_package(export(model, (x, m), dynamic_shapes=shapes), package_path=p)")
    program = hoisted_programs(ast.parse(script), RECORDS)[0]
    assert program.splitlines()[-1] == (
        "torch._inductor.aoti_compile_and_package(export(Attention(Config(dim=16)), (torch.randn(2, 5, 16, "
        "requires_grad=True), torch.zeros(2, 5, dtype=torch.bool))))")
    compiled = "from torch import compile as pt2\n" + SCRIPT.replace("torch.compile(model, fullgraph=True)", "pt2(model, fullgraph=True)")
    assert hoisted_programs(ast.parse(compiled), RECORDS)[0].splitlines()[-1].startswith(
        "pt2(Attention(Config(dim=16)), fullgraph=True)(torch.randn(2, 5, 16")


def test_a_decorated_entry_point_compiles_the_module_the_same_way():
    script = ("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
              "        return x.sin()\n\n\n@torch.compile\ndef step(model, x):\n    return model(x)\n\n\n"
              "step(Net(), torch.ones(3))\n")
    records = [{"class": "Net", "init": [], "init_kw": {}, "call": [tensor(3)]}]
    assert hoisted_programs(ast.parse(script), records)[0].splitlines()[-1] == "torch.compile(Net())(torch.randn(3))"


def test_a_call_argument_the_probe_could_not_describe_is_given_as_none():
    """A flex-attention decoder passes its `BlockMask` to every module; an optional mask is the
    usual case, and the run decides. Only a call's own arguments: a construction argument, or an
    object inside a list, still makes the record unusable."""
    records = [{"class": "Attention", "init": [config()], "init_kw": {},
                "call": [tensor(2, 5, 16), {"other": "BlockMask"}]}]
    program = hoisted_programs(ast.parse(SCRIPT), records)[0]
    assert program.splitlines()[-1] == "torch.compile(Attention(Config(dim=16)), fullgraph=True)(torch.randn(2, 5, 16), None)"
    nested = [{"class": "Attention", "init": [config()], "init_kw": {},
               "call": [tensor(2, 5, 16), {"seq": "list", "items": [{"other": "BlockMask"}]}]}]
    assert hoisted_programs(ast.parse(SCRIPT), nested) == []


def test_records_from_the_script_are_not_trusted():
    """The records come from the user's process: anything this module cannot write as plain code of
    the file's own classes makes that record unusable, never code of the script's choosing."""
    hostile = [
        {"class": "os.system", "init": [], "init_kw": {}, "call": []},  # not a class of the file
        {"class": "Attention", "init": [config()], "init_kw": {"x=__import__('os')": {"value": 1}}, "call": []},
        {"class": "Attention", "init": [{"dataclass": "Popen", "fields": {}}], "init_kw": {}, "call": []},
        {"class": "Attention", "init": [config()], "init_kw": {}, "call": [tensor(1 << 15, 1 << 15)]},  # too big
        {"class": "Attention", "init": [config()], "init_kw": {}, "call": [tensor(2, dtype="object")]},
        {"class": "Attention", "init": [config()], "init_kw": {}, "call": [{"tensor": [2], "dtype": "float32",
                                                                              "device": "meta"}]},
        {"class": "Attention", "init": [{"value": float("nan")}], "init_kw": {}, "call": []},
        {"class": "Attention", "init": [{"other": "Generator"}], "init_kw": {}, "call": []},
        {"class": "Attention", "init": "cfg", "init_kw": {}, "call": []},
        {"class": "Attention", "init": [], "init_kw": [], "call": []},
        "not a record",
    ]
    assert hoisted_programs(ast.parse(SCRIPT), hostile) == []
    assert hoisted_programs(ast.parse("import torch\nprint(1)\n"), RECORDS) == []  # no entry point


def test_the_reducer_starts_from_the_first_interesting_leap_and_goes_on_from_there():
    source = "import torch\na = 1\nb = 2\nc = 3\nprint(a, b, c)\nx = torch.compile(print)\n"
    leaps = ["import torch\nc = 3\nprint(c)\nx = torch.compile(print)\n",  # not interesting: no `b`
             "import torch\nb = 2\nprint(b, 5)\nx = torch.compile(print)\n"]
    result = reduce_source(source, lambda text: "b = 2" in text, leaps=leaps)
    assert result.stats.passes.get("hoist") == 1 and result.stats.pass_runs["hoist"] == 2
    assert "b = 2" in result.source and "a = 1" not in result.source


def at_entry(record, training=True, grad=True):
    return {**record, "at_entry": {"training": training, "grad": grad}}


def test_the_module_is_compiled_in_the_mode_the_script_compiled_it_in():
    """`model.eval()` and `torch.no_grad()` before the compiled call change what Inductor compiles
    (dropout, batch norm, an inference graph): the hoisted call keeps them."""
    records = [at_entry(record, training=False, grad=False) for record in RECORDS]
    program = hoisted_programs(ast.parse(SCRIPT), records)[0]
    assert program.splitlines()[-2:] == [
        "with torch.no_grad():",
        "    torch.compile(Attention(Config(dim=16)).eval(), fullgraph=True)(torch.randn(2, 5, 16, requires_grad=True), "
        "torch.zeros(2, 5, dtype=torch.bool))"]
    in_training = [at_entry(record) for record in RECORDS]
    assert hoisted_programs(ast.parse(SCRIPT), in_training) == hoisted_programs(ast.parse(SCRIPT), RECORDS)


CHECKED = SCRIPT.replace('    print("eager:"', "    model.eval()\n    y = model(x, m)\n    print(\"eager:\"").replace(
    "    for _ in range(3):", "    torch.testing.assert_close(compiled(x, m), y, atol=0.01, rtol=0.001)\n    for _ in range(3):")


def test_a_difference_of_values_is_hoisted_as_the_compiled_call_checked_against_eager():
    """An accuracy failure shows in a check, so the hoisted program makes one: the compiled module
    against the same module in eager, on the same inputs, at the script's own tolerance."""
    records = [at_entry(record, training=False, grad=False) for record in RECORDS]
    program = hoisted_programs(ast.parse(CHECKED), records, compare=True)[0]
    assert program.splitlines()[-5:] == [
        "model = Attention(Config(dim=16)).eval()",
        "x = torch.randn(2, 5, 16, requires_grad=True)",  # named as forward names them
        "mask = torch.zeros(2, 5, dtype=torch.bool)",
        "with torch.no_grad():",
        "    torch.testing.assert_close(torch.compile(model, fullgraph=True)(x, mask), model(x, mask), rtol=0.001, atol=0.01)"]
    assert "def main" not in program and "Encoder" not in program


def test_a_check_without_a_stated_tolerance_gets_the_accuracy_minifiers_and_names_do_not_collide():
    script = CHECKED.replace(", atol=0.01, rtol=0.001", "").replace("def main", "model = 3\nprint(model)\n\n\ndef main")
    program = hoisted_programs(ast.parse(script), RECORDS, compare=True)[0]
    assert program.splitlines()[-4:] == [
        "model_2 = Attention(Config(dim=16))",
        "x = torch.randn(2, 5, 16, requires_grad=True)",
        "mask = torch.zeros(2, 5, dtype=torch.bool)",
        "torch.testing.assert_close(torch.compile(model_2, fullgraph=True)(x, mask), model_2(x, mask), rtol=0.001, atol=0.001)"]
    one_stated = CHECKED.replace("torch.testing.assert_close(compiled(x, m), y, atol=0.01, rtol=0.001)",
                                 "assert torch.allclose(compiled(x, m), y, atol=0.01)")
    assert hoisted_programs(ast.parse(one_stated), RECORDS, compare=True)[0].endswith(
        "model(x, mask), rtol=1e-05, atol=0.01)\n")  # allclose's own default for the rtol it leaves out
    exported = CHECKED.replace("torch.compile(model, fullgraph=True)", "torch.export.export(model, (x, m)).module()")
    assert hoisted_programs(ast.parse(exported), RECORDS, compare=True) == []  # an export's check is not a plain call


def test_dims_the_script_marked_dynamic_are_marked_on_the_hoisted_input():
    """`torch._dynamo.mark_dynamic(x, 1)` on the outer input is what a specialization failure
    needs; the record carries the marks, and the hoisted call binds the input to mark it."""
    marked = {**RECORDS[0], "call": [{**tensor(2, 5, dtype="int64"), "dynamic": [1, 0]}, tensor(2, 5, dtype="bool")]}
    program = hoisted_programs(ast.parse(SCRIPT), [marked, RECORDS[1]])[1]
    assert program.splitlines()[-5:] == [
        "tokens = torch.zeros(2, 5, dtype=torch.int64)",
        "torch._dynamo.mark_dynamic(tokens, 0)",
        "torch._dynamo.mark_dynamic(tokens, 1)",
        "mask = torch.zeros(2, 5, dtype=torch.bool)",
        "torch.compile(Encoder(Config(dim=16)), fullgraph=True)(tokens, mask)"]
    bad = {**RECORDS[0], "call": [{**tensor(2, 5), "dynamic": [2]}]}  # no such dim
    assert hoisted_programs(ast.parse(SCRIPT), [bad]) == []


def test_fields_left_at_their_default_factorys_value_are_not_written_out():
    script = ("from dataclasses import dataclass, field\nimport torch\nimport torch.nn as nn\n\n\n@dataclass\nclass Cfg:\n"
              "    sizes: list = field(default_factory=lambda: [8, 16])\n    flags: dict = field(default_factory=lambda: {'a': 1})\n"
              "    eps: float = field(default=0.5)\n\n\nclass Net(nn.Module):\n    def __init__(self, cfg):\n"
              "        super().__init__()\n\n    def forward(self, x):\n        return x\n\n\n"
              "torch.compile(Net(Cfg()))(torch.ones(2))\n")
    def record(sizes):
        fields = {"sizes": {"seq": "list", "items": [{"value": n} for n in sizes]},
                  "flags": {"dict": {"a": {"value": 1}}}, "eps": {"value": 0.5}}
        return [{"class": "Net", "init": [{"dataclass": "Cfg", "fields": fields}], "init_kw": {}, "call": [tensor(2)]}]
    assert hoisted_programs(ast.parse(script), record([8, 16]))[0].endswith("torch.compile(Net(Cfg()))(torch.randn(2))\n")
    assert "Net(Cfg(sizes=[4]))" in hoisted_programs(ast.parse(script), record([4]))[0]


def test_a_tensor_the_leap_passes_stays_a_tensor_though_the_original_hid_it():
    """The original passes `batch[0]`, which the shape rule cannot follow to a tensor; the leap
    passes `torch.randn(4)`, and from then on no candidate may pass a number in its place."""
    source = ("import torch\nbatch = load()\nnet = torch.compile(Net())\nnet(batch[0])\nnet(batch[1])\n"
              "print('a long tail the leap drops')\n")
    leap = "import torch\nnet = torch.compile(Net())\nnet(torch.randn(4))\nnet(torch.randn(4))\n"
    result = reduce_source(source, lambda text: "torch.compile(Net())" in text and "net(" in text, leaps=[leap])
    assert result.stats.passes.get("hoist") == 1
    assert "torch.randn(" in result.source and "net(4)" not in result.source, result.source
