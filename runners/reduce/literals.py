"""The literals pass: put a setting's value where it is read, and run a loop over one value once.

Real reports keep their sizes in one place: a config dataclass (`cfg.d_model`), class constants, argparse
defaults (`args.batch_size`), module constants read in many places, and loops over the settings to try
(`for bs in cfg.batch_sizes`). The other passes cannot take these apart. Every reader needs the holder,
so deleting it fails. Inlining moves only values read once. So a reduced `mark_dynamic` report still
carried its 4-line `ForecastConfig` dataclass and a loop over a one-element list, around 5 lines that
fail. A maintainer would have written the numbers in.

The edits:
- a name bound once, to a literal, is replaced by that literal wherever it is read, and its
  assignment goes;
- an attribute name bound once in the module, to a literal, is replaced by the literal wherever it is
  read. The binding can be `self.eps = 1e-5`, a class-level `d_model: int = 32`, a dataclass
  `field(default=...)` or `field(default_factory=lambda: [...])`, or an argparse
  `add_argument("--batch-size", default=8)`. A field that a call sets by keyword, or a class that
  is called with arguments, keeps its readers: its default is not what they read;
- the same for an attribute bound once to a short list of module-level functions or classes
  (`self.blocks = [block]`, what a one-value comprehension folds to);
- `for v in [e]: body` (or `(e,)`, `range(1)`) becomes `v = e` and the body, when nothing in the
  body leaves the loop early.
The holder left unread then goes with the dead-code pass. Every candidate is still run: a value a
program mutates, or one whose identity matters, makes the predicate refuse it.
"""
from __future__ import annotations

import ast
import copy
from typing import Iterator

from runners.reduce.base import Edit, NodePath
from runners.reduce.paths import resolve, statement_lists, walk_paths

MAX_LITERAL_ITEMS = 8  # a longer list or tuple is data, not a setting


def literal_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Loops over one value first (they free the most), then names, then attributes.

    A parameter's literal default that no call passes is not written into the body: on the 63-line
    transformer of tests/repros/large that turned `TinyTransformer(dim=64, ...)` into literals
    early, and the search stopped at 20 lines where it otherwise reaches 6 (the wrapper's swap for
    its `Block` needed the token input to have become a float tensor first)."""
    for path, node in walk_paths(tree):
        if isinstance(node, ast.For) and single_value(node.iter) is not None and not _leaves_early(node):
            yield "literals", _unroll(path)
    names, attributes = literal_bindings(tree)
    for name in sorted(names):
        yield "literals", _propagate_name(name)
    for attribute in sorted(attributes):
        yield "literals", _propagate_attribute(attribute)


def is_literal(node: ast.AST | None) -> bool:
    """A constant, a negated one, or a short list, tuple or dict of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.List, ast.Tuple)):
        return len(node.elts) <= MAX_LITERAL_ITEMS and all(is_literal(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return len(node.keys) <= MAX_LITERAL_ITEMS and all(
            isinstance(key, ast.Constant) and is_literal(value) for key, value in zip(node.keys, node.values))
    return False


def single_value(iterable: ast.expr) -> ast.expr | None:
    """What a loop over `iterable` binds on its one iteration, when it has exactly one."""
    if isinstance(iterable, (ast.List, ast.Tuple)) and len(iterable.elts) == 1 \
            and not isinstance(iterable.elts[0], ast.Starred):
        return iterable.elts[0]
    if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
            and len(iterable.args) == 1 and not iterable.keywords and isinstance(iterable.args[0], ast.Constant)
            and iterable.args[0].value == 1):
        return ast.Constant(0)
    return None


def _leaves_early(loop: ast.For) -> bool:
    """A `break` or `continue` of this loop (not of a loop or function inside it)."""
    pending = list(loop.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
        if not isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _unroll(path: NodePath) -> Edit:
    def edit(tree: ast.AST) -> bool:
        field_name, index = path[-1]
        block = getattr(resolve(tree, path[:-1]), field_name)
        loop = block[index]
        block[index:index + 1] = [ast.Assign(targets=[loop.target], value=single_value(loop.iter))] + loop.body + loop.orelse
        return True
    return edit


def literal_bindings(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names, attribute names) bound exactly once in the module, to a literal."""
    names, attributes = _literal_values(tree)
    return set(names), set(attributes)


def _literal_values(tree: ast.AST) -> tuple[dict[str, ast.AST], dict[str, ast.AST]]:
    """literal_bindings, each with its literal."""
    name_values: dict[str, list[ast.AST | None]] = {}
    attribute_values: dict[str, list[ast.AST | None]] = {}
    class_bodies = _class_body_ids(tree)
    counted = _targets_counted_by_statement(tree)
    read_names, read_attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            read_names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            read_attributes.add(node.attr)
        if id(node) in counted:
            continue
        for name, value in _name_bindings(node, id(node) in class_bodies):
            name_values.setdefault(name, []).append(value)
        for attribute, value in _attribute_bindings(node, id(node) in class_bodies):
            attribute_values.setdefault(attribute, []).append(value)
    overridden = _keywords_and_called_classes(tree)
    names = {n: values[0] for n, values in name_values.items()
             if len(values) == 1 and is_literal(values[0]) and n in read_names}
    definitions = {node.name for node in getattr(tree, "body", [])
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                   and len(name_values.get(node.name, [])) == 1}
    attributes = {a: values[0] for a, values in attribute_values.items()
                  if len(values) == 1 and (is_literal(values[0]) or _lists_definitions(values[0], definitions))
                  and a not in overridden and a in read_attributes}
    return names, attributes


def _lists_definitions(node: ast.AST | None, definitions: set[str]) -> bool:
    """A short list or tuple of module-level functions or classes defined once, `self.blocks =
    [block]`: a setting too (what a one-element comprehension folds to), read the same from anywhere
    in the module."""
    return (isinstance(node, (ast.List, ast.Tuple)) and 0 < len(node.elts) <= MAX_LITERAL_ITEMS
            and all(isinstance(item, ast.Name) and item.id in definitions for item in node.elts))


def _name_bindings(node: ast.AST, in_class_body: bool) -> Iterator[tuple[str, ast.AST | None]]:
    """(name, its literal value or None) for each binding of a plain name `node` makes. A class
    body binds attributes, not names (see _attribute_bindings)."""
    if in_class_body and isinstance(node, (ast.Assign, ast.AnnAssign)):
        return
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value if len(node.targets) == 1 else None
        return
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, node.value
        return
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id, None
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, None
    elif isinstance(node, ast.arg):
        yield node.arg, None
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0], None
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        for name in node.names:
            yield name, None
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, None


def _attribute_bindings(node: ast.AST, in_class_body: bool) -> Iterator[tuple[str, ast.AST | None]]:
    """(attribute name, its literal value or None) for each binding of an attribute `node` makes."""
    if in_class_body and isinstance(node, ast.Assign):
        for target in node.targets:
            for name in _target_names(target):
                yield name, node.value if len(node.targets) == 1 and isinstance(target, ast.Name) else None
    elif in_class_body and isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, _field_default(node.value)
    elif in_class_body and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, None
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                yield target.attr, node.value if len(node.targets) == 1 else None
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
        yield node.target.attr, node.value
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.attr, None
    elif _is_add_argument(node):
        yield from _argparse_binding(node)


def _target_names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _field_default(value: ast.expr | None) -> ast.AST | None:
    """The default a class-level annotated field gives: the value itself, or a dataclass
    `field(default=v)` / `field(default_factory=lambda: v)`."""
    if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)) \
            and (getattr(value.func, "id", None) or getattr(value.func, "attr", None)) == "field":
        keywords = {k.arg: k.value for k in value.keywords}
        if "default" in keywords:
            return keywords["default"]
        factory = keywords.get("default_factory")
        return factory.body if isinstance(factory, ast.Lambda) and not factory.args.args else None
    return value


def _is_add_argument(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _argparse_binding(call: ast.Call) -> Iterator[tuple[str, ast.AST | None]]:
    """`add_argument("--batch-size", default=8)` binds `args.batch_size` to 8 (its `dest` if given)."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    dest = keywords.get("dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        name = dest.value
    else:
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long_flags = [f for f in flags if f.startswith("--")]
        chosen = long_flags[0][2:] if long_flags else (flags[0].lstrip("-") if flags else None)
        if not chosen:
            return
        name = chosen.replace("-", "_")
    yield name, keywords.get("default")


def _keywords_and_called_classes(tree: ast.AST) -> set[str]:
    """Attribute names whose class default is not what readers see: a call passes them by keyword
    (`Config(d_model=64)`), or they are fields of a class called with positional arguments."""
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    overridden: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        overridden.update(k.arg for k in node.keywords if k.arg)
        callee = node.func.id if isinstance(node.func, ast.Name) else None
        if callee in classes and (node.args or any(k.arg is None for k in node.keywords)):
            overridden.update(name for statement in classes[callee].body for name, _ in
                              _attribute_bindings(statement, True))
    return overridden


def _propagate_name(name: str) -> Edit:
    """Every read of `name` becomes its literal; the one assignment goes."""
    def edit(tree: ast.AST) -> bool:
        value = _drop_name_binding(tree, name)
        if value is None:
            return False
        _replace_reads(tree, lambda n: isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load), value)
        return True
    return edit


def _drop_name_binding(tree: ast.AST, name: str) -> ast.expr | None:
    for owner_path, field_name in statement_lists(tree):
        owner = resolve(tree, owner_path)
        if isinstance(owner, ast.ClassDef):
            continue
        block = getattr(owner, field_name)
        for index, statement in enumerate(block):
            target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                else getattr(statement, "target", None) if isinstance(statement, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and target.id == name and is_literal(statement.value):
                del block[index]
                if not block:
                    block.append(ast.Pass())
                return statement.value
    return None


def _propagate_attribute(attribute: str) -> Edit:
    """Every read of `.attribute` becomes its literal. The binding stays for the dead-code pass: a
    dataclass field is also a constructor parameter."""
    def edit(tree: ast.AST) -> bool:
        value = _literal_values(tree)[1].get(attribute)
        if value is None:
            return False
        _replace_reads(tree, lambda n: isinstance(n, ast.Attribute) and n.attr == attribute
                       and isinstance(n.ctx, ast.Load), value)
        return True
    return edit


def _replace_reads(tree: ast.AST, is_read, value: ast.AST) -> None:
    class Replace(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            if is_read(node):
                return copy.deepcopy(value)
            return super().generic_visit(node)
    Replace().visit(tree)


def _class_body_ids(tree: ast.AST) -> set[int]:
    return {id(statement) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for statement in node.body}


def _targets_counted_by_statement(tree: ast.AST) -> set[int]:
    """The target nodes of `x = v`, `x: T = v` and `o.a = v`: their statement counts the binding
    with its value, so the walk must not count them again as bare stores."""
    counted = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            counted.update(id(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
        elif isinstance(node, ast.AnnAssign):
            counted.add(id(node.target))
    return counted
