"""Addressing nodes in a syntax tree by their path from the root, so that an edit found on one tree can be
applied to a fresh copy of it."""
from __future__ import annotations

import ast
import copy
from typing import Iterator

from runners.reduce.base import Edit, NodePath, PathStep


def walk_paths(node: ast.AST, path: NodePath = ()) -> Iterator[tuple[NodePath, ast.AST]]:
    """Every node with its path from the root, parents before children (coarse edits first)."""
    yield path, node
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from walk_paths(item, path + ((name, index),))
        elif isinstance(value, ast.AST):
            yield from walk_paths(value, path + ((name, None),))


def resolve(tree: ast.AST, path: NodePath) -> ast.AST:
    node = tree
    for name, index in path:
        node = getattr(node, name) if index is None else getattr(node, name)[index]
    return node


def statement_lists(tree: ast.AST) -> list[tuple[NodePath, str]]:
    """(owner path, field) of every statement block, outermost first."""
    found = []
    for path, node in walk_paths(tree):
        for name in ("body", "orelse", "finalbody", "handlers"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], (ast.stmt, ast.excepthandler)):
                found.append((path, name))
    return found


def replace_with(path: NodePath, replacement: ast.expr) -> Edit:
    def edit(tree: ast.AST) -> bool:
        parent = resolve(tree, path[:-1])
        if ast.unparse(resolve(tree, path)) == ast.unparse(replacement):
            return False
        set_child(parent, path[-1], copy.deepcopy(replacement))
        return True
    return edit


def child_expressions(node: ast.expr) -> list[PathStep]:
    found = []
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.expr) and not isinstance(value, (ast.Starred, ast.Slice)):
            found.append((name, None))
        elif isinstance(value, list):
            found.extend((name, i) for i, v in enumerate(value) if isinstance(v, ast.expr) and not isinstance(v, ast.Starred))
    return found


def replace_with_child(path: NodePath, child_name: str, child_index: int | None) -> Edit:
    def edit(tree: ast.AST) -> bool:
        parent = resolve(tree, path[:-1])
        node = resolve(tree, path)
        child = getattr(node, child_name) if child_index is None else getattr(node, child_name)[child_index]
        set_child(parent, path[-1], child)
        return True
    return edit


def replace_with_part(path: NodePath, part: NodePath) -> Edit:
    """Replace the node at `path` by the node at `part` below it: `(("func", None), ("value", None))`
    is a method call's receiver, `(("generators", 0), ("iter", None))` what a comprehension runs over."""
    def edit(tree: ast.AST) -> bool:
        set_child(resolve(tree, path[:-1]), path[-1], resolve(tree, path + part))
        return True
    return edit


def set_child(parent: ast.AST, step: PathStep, value: ast.AST) -> None:
    name, index = step
    if index is None:
        setattr(parent, name, value)
    else:
        getattr(parent, name)[index] = value
