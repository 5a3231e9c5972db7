"""Folds: what a maintainer would write shorter, with the program doing the same."""
from __future__ import annotations

from runners.reduce import Reducer
from runners.reduce.classes import class_edits
from runners.reduce.folds import fold_edits
from tests.runners.test_reduce import prints
from tests.runners.test_reduce_modules import applied

PATCHES = """\
import torch


class Tagger(torch.nn.Module):
    def forward(self, images):
        patches = images
        patches = patches.reshape(-1, 4 * 4)
        return patches.mean(dim=1)


program = torch.export.export(Tagger(), (torch.randn(4, 8, 8),))
"""


def test_each_fold_is_one_candidate_and_changes_nothing_the_program_does():
    found = applied(PATCHES, fold_edits)
    assert [name for name, _ in found] == ["folds"] * 3
    arithmetic, calls_only, copy = (program for _, program in found)
    assert "reshape(-1, 16)" in arithmetic
    assert "\ntorch.export.export(Tagger()" in calls_only and "program =" not in calls_only
    assert "patches = images.reshape(-1, 4 * 4)" in copy and "patches = images\n" not in copy


def test_arithmetic_is_folded_only_into_something_no_longer():
    assert "x * 6" in applied("x = 1\nprint(x * (2 * 3))\n", fold_edits)[0][1]
    nested = applied("print(2 * 4 * 4 - 1)\n", fold_edits)
    assert nested[0][1] == "print(31)\n"
    assert applied("print(1 / 3)\n", fold_edits) == []  # 0.3333333333333333 is longer
    assert applied("print(1 // 0)\n", fold_edits) == []  # the error is the program's, not ours to fold away


def test_the_length_of_a_written_out_sequence_is_folded_to_the_count():
    """fresh_issues_9's genre tagger kept `n_genres = len('documentary')` and the length of five
    film synopses written out: a maintainer writes 11 and 5."""
    source = "n = len('documentary')\nprint(len(['a b', 'c d']) * n, len({1, 1, 2}), len((x, y)))\n"
    assert applied(source, fold_edits)[0][1] == "n = 11\nprint(2 * n, 2, 2)\n"
    nested = applied("print(len([[], []]) * 2)\n", fold_edits)
    assert nested[0][1] == "print(4)\n"
    for kept in ("print(len([f(), g()]))\n", "print(len([*a]))\n", "print(len({a, b}))\n", "print(len(x))\n"):
        assert applied(kept, fold_edits) == []  # a call may be the program's; a set of names may hold one value


def test_a_copy_is_read_through_only_while_both_names_hold_their_values():
    mutated_source = "a = [1]\nb = a\na = [2]\nprint(b)\n"
    assert not any("b = a" not in p for _, p in applied(mutated_source, fold_edits))
    in_a_branch = "def f(a, c):\n    b = a\n    if c:\n        b = 2\n    return b\nprint(f(1, True))\n"
    assert not any("b = a" not in p for _, p in applied(in_a_branch, fold_edits))
    closure = "def f(a):\n    b = a\n    g = lambda: b\n    return g()\nprint(f(1))\n"
    assert not any("b = a" not in p for _, p in applied(closure, fold_edits))
    augmented = "def f(a):\n    b = a\n    b += 1\n    return b\nprint(f(1))\n"
    assert not any("b = a" not in p for _, p in applied(augmented, fold_edits))


def test_the_reducer_folds_what_the_other_passes_cannot_shorten():
    source = """\
def area(width):
    side = width
    side = side * (2 * 3)
    return side


result = area(7)
print(result)
"""
    reduced = Reducer(prints("42\n")).reduce(source).source
    assert "(2 * 3)" not in reduced and "side = width" not in reduced
    assert prints("42\n")(reduced)


def test_a_comprehension_over_one_value_becomes_a_one_element_list():
    folded = applied("def block(x):\n    return x\n\nblocks = [block for i in range(1)]\nprint(blocks[0](2))\n",
                     fold_edits)
    assert len(folded) == 1 and "\nblocks = [block]\n" in folded[0][1]
    # a condition, more than one value, or a value that is neither a constant nor a name: not folded
    assert applied("print([2 for i in range(1) if i])\n", fold_edits) == []
    assert applied("print([2 for i in range(2)])\n", fold_edits) == []
    assert applied("print([i + 1 for i in [f()]])\n", fold_edits) == []


def test_a_comprehension_that_reads_its_one_value_gets_the_value_in_its_own_candidate():
    """`nn.ModuleList(nn.Embedding(n, 1) for n in (1,))`, fresh_issues_3's AOTAutograd repro."""
    source = "import torch.nn as nn\nlayers = nn.ModuleList((nn.Embedding(n, 1) for n in (1,)))\nprint(len(layers))\n"
    folded = applied(source, fold_edits)
    assert [text for _, text in folded] == [source.replace("(nn.Embedding(n, 1) for n in (1,))", "[nn.Embedding(1, 1)]")]
    both = "print([7 for i in range(1)], [i + 1 for i in range(1)])\n"
    assert [text for _, text in applied(both, fold_edits)] == ["print([7], [i + 1 for i in range(1)])\n",
                                                               "print([7 for i in range(1)], [0 + 1])\n"]


def test_a_list_of_one_block_built_in_init_and_looped_over_goes_away():
    source = """\
def block(x):
    return x * 2


class Net:
    def __init__(self):
        self.blocks = [block for i in range(1)]

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


print(Net().forward(21))
"""
    reduced = Reducer(prints("42\n")).reduce(source).source
    assert "blocks" not in reduced and "for " not in reduced, reduced
    assert prints("42\n")(reduced)


def test_an_unpacking_of_a_written_out_tuple_becomes_one_assignment_per_name():
    """`mixed, y_a, y_b = (mixed, targets, targets[perm])` (what a mixup step was cut to) becomes three
    assignments, so the dead-code pass can take the unread ones; a swap keeps its meaning only as one."""
    source = "def f(t, m):\n    m, a, b = (m, t, t * 2)\n    return b\nprint(f(3, 1))\n"
    folded = applied(source, fold_edits)
    assert len(folded) == 1 and "    b = t * 2\n    return b\n" in folded[0][1]  # `m = m` and the unread `a = t` go
    assert prints("6\n")(folded[0][1])
    [(_, itself)] = applied("def f(u):\n    u, p = (u, u)\n    return u + p\nprint(f(2))\n", fold_edits)
    assert "    return u + u\n" in itself and prints("4\n")(itself)  # `u = u` rebinds nothing `p` reads
    swap = applied("a, b = 1, 2\na, b = b, a\nprint(a)\n", fold_edits)
    assert len(swap) == 1 and "a = 1\nb = 2\na, b = (b, a)\n" in swap[0][1]  # only the first splits
    # a program smaller than before, so the driver takes it
    from runners.reduce import count_tokens
    assert count_tokens(folded[0][1]) < count_tokens(source)
    reduced = Reducer(prints("6\n")).reduce(source).source
    assert "a = t" not in reduced and "m, a" not in reduced


def test_an_unpacking_of_names_and_constants_is_read_in_place():
    """`mu, log_sigma = (x, 1)` (what a VAE's encoder was cut to) is one step from `x` and `1` in
    the lines that read them; two assignments alone would be longer than the unpacking."""
    source = "def vae(x):\n    mu, log_sigma = (x, 1)\n    return mu * log_sigma + mu\nprint(vae(2))\n"
    [(_, folded)] = applied(source, fold_edits)
    assert folded == "def vae(x):\n    return x * 1 + x\nprint(vae(2))\n"
    rebound_later = source.replace("    return", "    x = 5\n    return")
    [(_, kept_copy)] = applied(rebound_later, fold_edits)
    assert "    mu = x\n    x = 5\n    return mu * 1 + mu\n" in kept_copy  # `x` is another value by then
    assert prints("4\n")(kept_copy)


LAYERS = """\
def build(width):
    layers, d = [], 4
    layers.append(d * width)
    layers.append(d + width)
    total = sum([*layers, *(1,)])
    return total


print(build(2))
"""


def test_a_list_built_by_back_to_back_appends_is_written_out():
    programs = [program for _, program in applied(LAYERS, fold_edits)]
    [folded] = [p for p in programs if ".append" not in p]
    assert "    d = 4\n    layers = [d * width, d + width]\n" in folded  # the unpacking split, `d` first
    assert prints("15\n")(folded)


def test_an_append_after_something_else_reads_the_list_stays():
    between = LAYERS.replace("    layers.append(d * width)\n", "    layers.append(d * width)\n    print(len(layers))\n")
    reads_itself = LAYERS.replace("layers.append(d + width)", "layers.append(len(layers))")
    assert [p for _, p in applied(between, fold_edits) if "layers = [d * width]\n" in p]  # the first one folds
    assert not [p for _, p in applied(between, fold_edits) if "d + width]" in p]
    assert not [p for _, p in applied(reads_itself, fold_edits) if "len(layers)]" in p]


def test_a_written_out_list_spread_into_a_call_or_a_display_is_spread_by_hand():
    [spread] = [p for _, p in applied(LAYERS, fold_edits) if "*(1,)" not in p]
    assert "sum([*layers, 1])" in spread  # the name stays spread; the written-out tuple does not
    assert applied("print(*[1, 2], *(3,))\n", fold_edits)[0][1] == "print(1, 2, 3)\n"


NORMALIZER = """\
import torch
from torch import nn


class Normalizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.full((2,), 1.0))
        self.register_buffer("scale", torch.full((2,), 2.0), persistent=False)
        self.register_buffer("unused", None)

    def forward(self, x):
        return (x - self.mean) * self.scale


print(torch.compile(Normalizer(), backend="eager")(torch.ones(2)).tolist())
"""


def test_buffers_become_plain_attributes_so_the_module_can_dissolve():
    assert applied(NORMALIZER, class_edits) == []  # `register_buffer` is nn.Module's
    [folded] = [p for _, p in applied(NORMALIZER, fold_edits) if "self.mean =" in p]
    assert "self.mean = torch.full((2,), 1.0)" in folded and "self.scale = torch.full((2,), 2.0)\n" in folded
    assert "self.register_buffer('unused', None)" in folded  # a None buffer is no attribute value
    assert prints("[0.0, 0.0]\n")(folded)
    without_none = folded.replace("        self.register_buffer('unused', None)\n", "")
    [(_, function)] = applied(without_none, class_edits)
    assert "class" not in function and prints("[0.0, 0.0]\n")(function), function


def test_a_choice_on_a_constant_is_the_branch_it_takes():
    """`USE_COMPILE = True` inlined into `torch.compile(model) if USE_COMPILE else model` (every held-out
    report has such a flag) leaves a choice no run could take the other way."""
    source = ("def run(x):\n    f = (abs if True else str)\n    if 0:\n        x = -x\n    else:\n        x = x * 2\n"
              "    if 1:\n        pass\n    return f(x)\nprint(run(-3))\n")
    [(_, folded)] = [(n, p) for n, p in applied(source, fold_edits) if "if True" not in p]
    assert folded == "def run(x):\n    f = abs\n    x = x * 2\n    pass\n    return f(x)\nprint(run(-3))\n", folded
    assert prints("6\n")(folded) and prints("6\n")(source)
    assert not [p for _, p in applied("x = 1\nprint(abs if x else str)\n", fold_edits) if "abs if" not in p]
