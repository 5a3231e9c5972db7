"""The dead-code pass: what nothing reads, deleted in one candidate.

Deleting statements one chunk at a time finds dead code too, but pays a run for each piece that
sits between live statements; a repro taken from a real project carries many such pieces (unused
imports, a config class's unread fields, submodules `__init__` builds that `forward` never calls).
One candidate removes them all; if that loses the failure (an import with a side effect, say),
two narrower candidates follow, and the statement pass still has its turn.
"""
from __future__ import annotations

import ast
from typing import Iterator

from runners.reduce.base import Edit

KINDS_ALL = ("import", "definition", "attribute", "field")


def dead_code_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Everything unread at once; then unread imports and definitions; then unread attributes and fields."""
    for kinds in (KINDS_ALL, ("import", "definition"), ("attribute", "field")):
        yield "dead", _delete_unread(kinds)


def _delete_unread(kinds: tuple[str, ...]) -> Edit:
    def edit(tree: ast.AST) -> bool:
        names, attributes = _reads(tree)
        removed = False
        if "import" in kinds or "definition" in kinds:
            removed |= _drop_module_level(tree, names, kinds)
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            if "field" in kinds and not cls.decorator_list:  # a decorated class (dataclass) makes fields parameters
                removed |= _drop_fields(cls, names | attributes)
            if "attribute" in kinds:
                removed |= _drop_self_attributes(cls, attributes)
        return removed
    return edit


def _reads(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names read anywhere, attribute names read anywhere, `getattr` strings included)."""
    names, attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            attributes.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            attributes.add(node.value)  # getattr(self, "name"), __all__ entries
    return names, attributes


def _drop_module_level(tree: ast.AST, names: set[str], kinds: tuple[str, ...]) -> bool:
    removed, kept = False, []
    for node in getattr(tree, "body", []):
        if "import" in kinds and isinstance(node, (ast.Import, ast.ImportFrom)) and _unread_import(node, names):
            removed = True
            if node.names:
                kept.append(node)
            continue
        if "definition" in kinds and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name not in names:
            removed = True
            continue
        kept.append(node)
    tree.body[:] = kept
    return removed


def _unread_import(node: ast.Import | ast.ImportFrom, names: set[str]) -> bool:
    """Drop the aliases nothing reads (in place); True when any went. `from __future__` stays."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return False
    bound = [(alias, (alias.asname or alias.name).split(".")[0]) for alias in node.names]
    read = [alias for alias, name in bound if name in names or name == "*"]
    if len(read) == len(node.names):
        return False
    node.names[:] = read
    return True


def _drop_fields(cls: ast.ClassDef, read: set[str]) -> bool:
    """Class-level `name = value` / `name: type = value` that nothing reads."""
    kept = [s for s in cls.body if not (_field_name(s) and _field_name(s) not in read)]
    removed = len(kept) != len(cls.body)
    cls.body[:] = kept or [ast.Pass()]
    return removed


def _field_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        name = statement.targets[0].id
    else:
        return None
    return None if name.startswith("__") else name


def _drop_self_attributes(cls: ast.ClassDef, read: set[str]) -> bool:
    """`self.name = value` in the class's methods, where nothing anywhere reads `.name`."""
    removed = False
    for method in (s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))):
        kept = [s for s in method.body if not (_self_attribute(s) and _self_attribute(s) not in read)]
        if len(kept) != len(method.body):
            removed = True
            method.body[:] = kept or [ast.Pass()]
    return removed


def _self_attribute(statement: ast.stmt) -> str | None:
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AnnAssign) else []
    if len(targets) == 1 and isinstance(targets[0], ast.Attribute) and isinstance(targets[0].value, ast.Name) \
            and targets[0].value.id == "self":
        return targets[0].attr
    return None


def without_dead_code(source: str) -> str:
    """`source` with everything unread deleted (the all-at-once candidate), as text; `source`
    itself when it does not parse or nothing is dead."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    _, edit = next(dead_code_edits(tree))
    return ast.unparse(tree) + "\n" if edit(tree) else source
