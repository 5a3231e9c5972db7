"""Replaying: a failure that shows only across calls (a recompile), rebuilt from what an eager run saw.

Hoisting (hoist.py) compiles one module for one call; a recompile needs the calls whose inputs
change. A `replay` recording run (runners/_torch_probe.py) goes on through the first compiled
module of the script that is called and records its first calls; `replayed_programs` builds that
module as the script built it and calls it on fresh inputs like each, in order. Calls that differ by
one whole number stepping evenly (a list's length, a batch size) become one loop, which is what a
maintainer writes and is what keeps the program smaller than the script it came from.
"""
from __future__ import annotations

import ast
import copy
from typing import Any, Sequence

from runners.reduce.base import format_source
from runners.reduce.hoist import (Placeholders, Unrepresentable, assignment, spec_items, under_no_grad, without_unread,
                                  entry_applied, entry_call, in_entry_mode, instantiation, live_statements, preamble_of,
                                  value_expr)
from runners.reduce.paths import NodePath, replace_with, walk_paths
from runners.reduce.shape import is_export, torch_imports

MAX_REPLAYED_CALLS = 16


def replayed_programs(tree: ast.Module, records: Sequence[Any], entry: Any) -> list[str]:
    """For a failure that shows across calls (a recompile): the compiled module built as the
    script built it, then called on fresh inputs like each of the script's calls of it, in order
    (`entry`: what a `replay` recording run saw). At most one program."""
    call = entry_call(tree)
    if call is None or is_export(call, torch_imports(tree)) or not isinstance(entry, dict):
        return []
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    record = next((r for r in records if isinstance(r, dict) and r.get("class") == entry.get("class")), None)
    if record is None:
        return []
    try:
        instance = in_entry_mode(instantiation(record, classes), record)
        calls = [[value_expr(spec, classes) for spec in spec_items(args)] for args in spec_items(entry.get("calls"))[:MAX_REPLAYED_CALLS]]
    except (Unrepresentable, AttributeError, TypeError):
        return []
    if not calls:
        return []
    names = Placeholders()
    model = names.new("model")
    compiled = entry_applied(call, instance, []).func
    replay = replay_statements([_as_repeated(ast.Call(func=ast.Name(id=model, ctx=ast.Load()), args=args, keywords=[]))
                                for args in calls], names)
    tail = [assignment(model, compiled)] + under_no_grad(replay, record, len(replay))
    modules = {r.get("class") for r in records if isinstance(r, dict)}
    body = live_statements(copy.deepcopy(preamble_of(tree, call)), ast.Module(body=tail, type_ignores=[]), modules) + tail
    return [names.named(without_unread(format_source(ast.Module(body=body, type_ignores=[]))))]


def _as_repeated(node: ast.Call) -> ast.Call:
    """Each list of the same fresh tensor, n times, as `[torch.zeros(8, 16) for _ in range(n)]` (one
    form whatever n, so that calls that differ by a list's length differ by one number)."""
    class Repeated(ast.NodeTransformer):
        def visit_List(self, found: ast.List) -> ast.expr:
            self.generic_visit(found)
            if not (found.elts and all(isinstance(e, ast.Call) for e in found.elts) and len({ast.dump(e) for e in found.elts}) == 1):
                return found
            return ast.ListComp(elt=found.elts[0], generators=[ast.comprehension(
                target=ast.Name(id="_", ctx=ast.Store()), iter=_range(0, len(found.elts), 1), ifs=[], is_async=0)])
    return Repeated().visit(node)


def replay_statements(calls: list[ast.Call], names: Placeholders) -> list[ast.stmt]:
    """The calls, one statement each; or, where they differ by one whole number only and it steps
    evenly (a list's length 1, 2, 3, ...; batch sizes 8, 16, 24), one loop over those numbers."""
    blank = [_without_constants(call) for call in calls]
    numbers = [[node.value for _, node in _constants(call)] for call in calls]
    if len(calls) < 3 or len(set(blank)) != 1:
        return [ast.Expr(call) for call in calls]
    varying = [i for i, column in enumerate(zip(*numbers)) if len(set(column)) > 1]
    values = [row[varying[0]] for row in numbers] if len(varying) == 1 else []
    steps = {b - a for a, b in zip(values, values[1:])}
    if not values or not all(type(v) is int for v in values) or len(steps) != 1 or 0 in steps:
        return [ast.Expr(call) for call in calls]
    step = steps.pop()
    body, counter = copy.deepcopy(calls[0]), names.new("n")
    replace_with(_constants(body)[varying[0]][0], ast.Name(id=counter, ctx=ast.Load()))(body)
    return [ast.For(target=ast.Name(id=counter, ctx=ast.Store()), iter=_range(values[0], values[-1] + step, step),
                    body=[ast.Expr(body)], orelse=[])]


def _without_constants(node: ast.AST) -> str:
    blank = copy.deepcopy(node)
    for child in ast.walk(blank):
        if isinstance(child, ast.Constant):
            child.value = None
    return ast.dump(blank)


def _constants(node: ast.AST) -> list[tuple[NodePath, ast.Constant]]:
    return [(path, child) for path, child in walk_paths(node) if path and isinstance(child, ast.Constant)]


def _range(start: int, stop: int, step: int) -> ast.Call:
    """`range(stop)`, `range(start, stop)` or `range(start, stop, step)`, whichever says it."""
    args = [stop] if start == 0 and step == 1 else [start, stop] if step == 1 else [start, stop, step]
    return ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[ast.Constant(a) for a in args], keywords=[])
