"""The passes that only know syntax: delete statements, unwrap blocks, drop arguments, replace an expression by a
part of it, shrink numbers. Each yields (pass name, edit), coarse edits first."""
from __future__ import annotations

import ast
from typing import Iterator, Sequence

from runners.reduce.base import Edit, NodePath
from runners.reduce.dead import target_names
from runners.reduce.paths import (
    child_expressions, replace_with, replace_with_child, replace_with_part, resolve, statement_lists, walk_paths)


def statement_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Delete chunks of every block, halving the chunk size (ddmin's complement steps)."""
    for owner_path, name in statement_lists(tree):
        length = len(getattr(resolve(tree, owner_path), name))
        chunk = length
        while chunk >= 1:
            for start in range(0, length, chunk):
                yield "statements", _delete_slice(owner_path, name, start, start + chunk)
            chunk //= 2


def _delete_slice(owner_path: NodePath, name: str, start: int, stop: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        owner = resolve(tree, owner_path)
        items = getattr(owner, name)
        if start >= len(items):
            return False
        del items[start:stop]
        if not items and name in ("body",) or (not items and name == "handlers"):
            if name == "handlers":
                return False  # a try needs a handler or a finally; unwrap handles try
            items.append(ast.Pass())
        return True
    return edit


UNWRAPPABLE = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith,
               ast.FunctionDef, ast.ClassDef)  # a def's body hoisted in place: inlining a one-use layer


def unwrap_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Replace a compound statement by one of its bodies, split `a, b = x, y` into one assignment
    each (so the half nothing reads can go), and keep only the value of an assignment whose names
    nothing reads where that value calls something (`cos, sin = rope_tables(T)` -> `rope_tables(T)`:
    the call may be what fails, so the dead-code pass keeps it; fresh_issues_10's export repro
    otherwise ended with `() = rope_tables(T)`, its targets dropped one by one)."""
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store)}
    for owner_path, name in statement_lists(tree):
        owner = resolve(tree, owner_path)
        for index, statement in enumerate(getattr(owner, name)):
            if _pairs(statement):
                yield "unwrap", _split_assignment(owner_path, name, index)
            if _unread_call_result(statement, read):
                yield "unwrap", _value_alone(owner_path, name, index)
            for body_name in ("body", "orelse", "finalbody"):
                body = getattr(statement, body_name, None)
                if isinstance(statement, UNWRAPPABLE) \
                        and isinstance(body, list) and body:
                    yield "unwrap", _splice(owner_path, name, index, body_name)
            if isinstance(statement, ast.Try):
                for handler_index in range(len(statement.handlers)):
                    yield "unwrap", _splice(owner_path, name, index, "handlers", handler_index)


def _unread_call_result(statement: ast.stmt, read: set[str]) -> bool:
    if not (isinstance(statement, ast.Assign) and any(isinstance(n, ast.Call) for n in ast.walk(statement.value))):
        return False
    names = [n for target in statement.targets for n in target_names(target)]
    return None not in names and not any(n in read or n.startswith("__") for n in names)


def _value_alone(owner_path: NodePath, name: str, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        items = getattr(resolve(tree, owner_path), name)
        if index >= len(items) or not isinstance(items[index], ast.Assign):
            return False
        items[index] = ast.Expr(value=items[index].value)
        return True
    return edit


def _splice(owner_path: NodePath, name: str, index: int, body_name: str, handler: int | None = None) -> Edit:
    def edit(tree: ast.AST) -> bool:
        items = getattr(resolve(tree, owner_path), name)
        if index >= len(items):
            return False
        statement = items[index]
        body = statement.handlers[handler].body if handler is not None else getattr(statement, body_name, None)
        if not body:
            return False
        items[index:index + 1] = body
        return True
    return edit


def _pairs(statement: ast.stmt) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of each name a tuple assignment of a tuple binds; [] for any other statement."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return []
    target, value = statement.targets[0], statement.value
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts) > 1):
        return []
    if any(isinstance(n, ast.Starred) for n in target.elts + value.elts):
        return []
    return list(zip(target.elts, value.elts))


def _split_assignment(owner_path: NodePath, name: str, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        items = getattr(resolve(tree, owner_path), name)
        pairs = _pairs(items[index]) if index < len(items) else []
        if not pairs:
            return False
        items[index:index + 1] = [ast.Assign(targets=[target], value=value) for target, value in pairs]
        return True
    return edit


ARGUMENT_FIELDS = (("Call", "args"), ("Call", "keywords"), ("List", "elts"), ("Tuple", "elts"), ("Set", "elts"),
                   ("Dict", "keys"), ("arguments", "args"), ("arguments", "kwonlyargs"), ("ClassDef", "bases"),
                   ("FunctionDef", "decorator_list"), ("ClassDef", "decorator_list"), ("Import", "names"),
                   ("ImportFrom", "names"))


# A closeness check's threshold is part of the failure, not a size: dropped or shrunk towards 0,
# float noise between compiled and eager would pass for the bug (and the compiler-off run, eager
# against itself, cannot tell).
TOLERANCE_KEYWORDS = frozenset({"rtol", "atol", "tol", "rel_tol", "abs_tol"})


def argument_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Drop one element of argument-like lists (call args, kwargs, list items, params, imports);
    never a tolerance keyword."""
    for path, node in walk_paths(tree):
        for type_name, name in ARGUMENT_FIELDS:
            if type(node).__name__ == type_name:
                for index, item in enumerate(getattr(node, name)):
                    if not (isinstance(item, ast.keyword) and item.arg in TOLERANCE_KEYWORDS):
                        yield "arguments", _drop_item(path, name, index)


def _drop_item(path: NodePath, name: str, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        node = resolve(tree, path)
        items = getattr(node, name)
        if index >= len(items) or (isinstance(node, (ast.Import, ast.ImportFrom)) and len(items) == 1):
            return False
        del items[index]
        if isinstance(node, ast.Dict):
            del node.values[index]
        if isinstance(node, ast.arguments) and name == "args" and node.defaults:
            excess = len(node.defaults) - len(node.args)
            if excess > 0:
                del node.defaults[:excess]
        if isinstance(node, ast.arguments) and name == "kwonlyargs":
            del node.kw_defaults[index]
        return True
    return edit


def expression_edits(tree: ast.AST, replacements: Sequence[ast.expr] = ()) -> Iterator[tuple[str, Edit]]:
    """Replace an expression by one of its direct subexpressions, or a call by a caller-given
    simple expression (the caller knows its domain: e.g. a small tensor for any tensor-making call).
    A bare imported module is never offered as the simpler value (`torch.randn(2)` -> `torch` may
    still fail the same way, but nobody can read that repro), nor is a call's callee
    (`f(torch.randn(2))` -> `f(torch.randn)` passes a function where a value was). A method call
    may become its receiver (`Net().eval()` -> `Net()`, `x.contiguous()` -> `x`), and a
    comprehension the sequence it runs over (`[p for p in passages]` -> `passages`). What a call
    calls is replaced only where it is a choice (`(torch.compile(f) if opt else f)(x)` ->
    `torch.compile(f)(x)`): any other callee would lose the call's meaning (`a.run(x)` -> `a(x)`)."""
    modules = imported_names(tree)
    for path, node in walk_paths(tree):
        if not path or not isinstance(node, ast.expr) or isinstance(node, (ast.Name, ast.Constant)):
            continue
        if path[-1][0] in ("targets", "target", "ctx") or isinstance(node, (ast.Starred, ast.Slice)):
            continue
        if path[-1][0] == "func" and not isinstance(node, CHOICES):
            continue
        for child_name, child_index in child_expressions(node):
            child = getattr(node, child_name) if child_index is None else getattr(node, child_name)[child_index]
            if isinstance(node, ast.Call) and child_name == "func":
                continue
            if isinstance(child, ast.Name) and child.id in modules:
                continue
            yield "expressions", replace_with_child(path, child_name, child_index)
        if isinstance(node, ast.Call) and _method_receiver(node, modules):
            yield "expressions", replace_with_part(path, RECEIVER)
        if isinstance(node, COMPREHENSIONS) and len(node.generators) == 1:
            yield "expressions", replace_with_part(path, ITERABLE)
        if isinstance(node, ast.Call):
            for replacement in replacements:
                yield "expressions", replace_with(path, replacement)


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
CHOICES = (ast.IfExp, ast.BoolOp)  # `a if c else b`, `a or b`: each part is a callee of its own
RECEIVER = (("func", None), ("value", None))  # `x` of `x.method(...)`
ITERABLE = (("generators", 0), ("iter", None))  # `xs` of `[f(x) for x in xs]`


def _method_receiver(call: ast.Call, modules: set[str]) -> bool:
    """Whether `call` is `receiver.method(...)` on a value (not `torch.randn(...)` on a module)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    root = call.func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return not (isinstance(root, ast.Name) and root.id in modules)


def imported_names(tree: ast.AST) -> set[str]:
    """Names a module binds with `import` (modules, mostly)."""
    names = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def constant_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Shrink numbers: n -> 1, 2, n // 2 (and floats to 1.0 / 0.0); sizes and counts get small.
    A tolerance keyword's value stays."""
    thresholds = {id(k.value) for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg in TOLERANCE_KEYWORDS}
    numbers = [(path, node) for path, node in walk_paths(tree) if path and id(node) not in thresholds
               and isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.value, bool)]
    for path, node in numbers:
        for smaller in _smaller_numbers(node.value):
            yield "constants", _replace_constant(path, smaller)
    # One size written in several places (`Block(64)` and `torch.randn(64)`): shrunk one at a time,
    # each alone makes a shape mismatch; shrunk together, they stay one size.
    by_value: dict = {}
    for path, node in numbers:
        by_value.setdefault((type(node.value), node.value), []).append(path)
    for (_, value), paths in by_value.items():
        if len(paths) > 1:
            for smaller in _smaller_numbers(value):
                yield "constants", _replace_constants(paths, smaller)


def _smaller_numbers(value: int | float) -> list[int | float]:
    if isinstance(value, float):
        return [v for v in (0.0, 1.0, round(value / 2, 3)) if abs(v) < abs(value)]
    options = [1, 2, value // 2] if value > 2 else ([1] if value == 2 else [])
    if value < 0:
        options = [-1, value // 2]
    return list(dict.fromkeys(v for v in options if abs(v) < abs(value)))


def _replace_constants(paths: list[NodePath], value: int | float) -> Edit:
    edits = [_replace_constant(path, value) for path in paths]

    def edit(tree: ast.AST) -> bool:
        return all([change(tree) for change in edits])
    return edit


def _replace_constant(path: NodePath, value: int | float) -> Edit:
    def edit(tree: ast.AST) -> bool:
        node = resolve(tree, path)
        if not isinstance(node, ast.Constant) or abs(node.value) <= abs(value):
            return False
        node.value = value
        return True
    return edit
