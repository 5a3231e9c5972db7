"""Python source laid out as a person writes it (pure; the minimizer and the test generator share it)."""
from __future__ import annotations

import ast
import re

CLASS_HEADER_GAP = re.compile(r"^([ \t]*class [^\n]*:\n)\n", re.MULTILINE)


def unparse(node: ast.AST) -> str:
    """`ast.unparse` without the blank line it puts between a `class ...:` line and its first method."""
    return CLASS_HEADER_GAP.sub(r"\1", ast.unparse(node))


def tidy(source: str) -> str:
    """`ast.unparse` output laid out like a hand-written script: two blank lines around top-level defs."""
    body = ast.parse(source).body
    parts: list[str] = []
    for index, node in enumerate(body):
        if index and (_is_def(node) or _is_def(body[index - 1])):
            parts.append("\n\n")
        parts.append(unparse(node) + "\n")
    return "".join(parts)


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
