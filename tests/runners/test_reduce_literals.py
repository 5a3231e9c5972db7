"""The literals pass and the edits that let a setting's holder go: examples of use."""
from __future__ import annotations

import ast
import copy

from runners.reduce import reduce_source
from runners.reduce.base import format_source
from runners.reduce.literals import literal_bindings, literal_edits
from tests.runners.test_reduce import prints


def candidates(source: str) -> list[str]:
    """Every candidate the literals pass offers for `source`, as text."""
    tree, found = ast.parse(source), []
    for _, edit in literal_edits(tree):
        copied = copy.deepcopy(tree)
        if edit(copied):
            found.append(format_source(copied))
    return found


def test_a_config_dataclass_and_a_loop_over_one_setting_are_written_into_their_readers():
    source = ("from dataclasses import dataclass, field\n\n@dataclass\nclass Config:\n    width: int = 3\n"
              "    sizes: list = field(default_factory=lambda: [4])\n\ncfg = Config()\nfor n in cfg.sizes:\n"
              "    print(n * cfg.width)\n")
    result = reduce_source(source, prints("12\n"))
    assert "Config" not in result.source and "for " not in result.source, result.source
    assert result.stats.passes.get("literals")


def test_only_settings_bound_once_to_a_literal_are_propagated():
    source = ("import argparse\nN = 4\nM = compute()\nK = 1\nK += 1\nFLAGS = {'max_autotune': True}\n\n"
              "class Config:\n    depth = 2\n    width = 8\n\n"
              "parser = argparse.ArgumentParser()\nparser.add_argument('--batch-size', type=int, default=8)\n"
              "args = parser.parse_args()\ncfg = Config()\ncfg.width = 16\n"
              "print(N, M, K, FLAGS, cfg.depth, cfg.width, args.batch_size)\n")
    names, attributes = literal_bindings(ast.parse(source))
    assert names == {"N", "FLAGS"}  # M is computed, K is bound twice
    assert attributes == {"depth", "batch_size"}  # width is bound twice


def test_a_list_of_module_level_functions_is_a_setting_but_not_a_list_of_other_names():
    source = ("def block(x):\n    return x\n\nfactor = 2\n\nclass Net:\n    def __init__(self):\n"
              "        self.blocks = [block]\n        self.scales = [factor]\n\n"
              "net = Net()\nprint(net.blocks, net.scales)\n")
    assert literal_bindings(ast.parse(source))[1] == {"blocks"}  # `factor` is data that may be bound again
    assert any("print([block], net.scales)" in candidate for candidate in candidates(source))


def test_a_default_a_call_overrides_is_not_what_readers_see():
    source = ("from dataclasses import dataclass\n\n@dataclass\nclass Config:\n    width: int = 3\n    depth: int = 2\n\n"
              "small = Config(width=1)\nprint(small.width, small.depth)\n")
    assert literal_bindings(ast.parse(source))[1] == {"depth"}
    positional = source.replace("Config(width=1)", "Config(1)")
    assert literal_bindings(ast.parse(positional))[1] == set()  # which field 1 sets is the class's business


def test_a_loop_that_can_leave_early_is_not_unrolled():
    assert "i = 0\nprint(i)\n" in candidates("for i in range(1):\n    print(i)\n")
    assert candidates("for i in [5]:\n    if i:\n        break\n") == []
    assert candidates("for i in [5]:\n    for j in [i]:\n        break\n") == ["i = 5\nfor j in [i]:\n    break\n"]


def test_a_method_call_gives_way_to_its_receiver_and_a_pair_assignment_splits():
    source = ("class Box:\n    def __init__(self):\n        self.v = len('seven!!')\n\n    def ready(self):\n"
              "        return self\n\nbox, label = (Box().ready(), 'unused')\nprint(box.v)\n")
    result = reduce_source(source, prints("7\n"))
    assert "ready" not in result.source and "label" not in result.source, result.source


def test_a_comprehension_gives_way_to_what_it_runs_over():
    result = reduce_source("items = (3, 4)\nprint(sum([item for item in items]))\n", prints("7\n"))
    assert " for " not in result.source, result.source


def test_an_unread_forward_parameter_goes_with_its_argument_at_every_instance_call():
    source = ("class Scale:\n    def __call__(self, x, mask, factor=2):\n        return x * factor\n\n"
              "model = Scale()\nprint(model(21, [1, 2, 3]), Scale()(21, None, 2))\n")
    result = reduce_source(source, prints("42 42\n"))
    assert "mask" not in result.source and "[1, 2, 3]" not in result.source, result.source


def test_a_chosen_callee_gives_way_to_either_choice():
    source = ("def twice(x):\n    return 2 * x\n\nopt = twice\n"
              "print((opt if len('on') else twice)(21), (opt or twice)(21))\n")
    result = reduce_source(source, prints("42 42\n"))
    assert " if " not in result.source and " or " not in result.source, result.source
