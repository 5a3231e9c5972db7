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
    body = _without_starred_literals(ast.parse(source)).body
    parts: list[str] = []
    for index, node in enumerate(body):
        if index and (_is_def(node) or _is_def(body[index - 1])):
            parts.append("\n\n")
        parts.append(unparse(node) + "\n")
    return "".join(parts)


def _without_starred_literals(tree: ast.Module) -> ast.Module:
    """`f(*(x, y))` -> `f(x, y)`: what inlining `inputs = (x, y)` into `f(*inputs)` leaves."""
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and any(isinstance(a, ast.Starred) and isinstance(a.value, (ast.Tuple, ast.List))
                                              for a in call.args):
            call.args = [item for arg in call.args for item in (
                arg.value.elts if isinstance(arg, ast.Starred) and isinstance(arg.value, (ast.Tuple, ast.List)) else [arg])]
    return tree


def code_lines(source: str) -> int:
    """Lines that hold code: neither blank nor only a comment."""
    return sum(1 for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


INDUCTOR_ONLY_OPTIONS = ("mode", "options")  # other backends refuse them


def with_backend(source: str, backend: str) -> str:
    """Every `torch.compile` call or decorator of `source` with `backend=...`: PyTorch's own tests use
    the cheapest backend that shows a failure. A source without torch.compile comes back unchanged."""
    tree = ast.parse(source)
    changed = False
    for node in ast.walk(tree):
        for index, decorator in enumerate(getattr(node, "decorator_list", ())):
            if _is_torch_compile(decorator):
                node.decorator_list[index] = ast.Call(decorator, [], [ast.keyword("backend", ast.Constant(backend))])
                changed = True
        if isinstance(node, ast.Call) and _is_torch_compile(node.func):
            keywords = [k for k in node.keywords if k.arg != "backend"
                        and (backend == "inductor" or k.arg not in INDUCTOR_ONLY_OPTIONS)]
            node.keywords = keywords + [ast.keyword("backend", ast.Constant(backend))]
            changed = True
    return tidy(ast.unparse(ast.fix_missing_locations(tree))) if changed else source


def _is_torch_compile(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "compile" and isinstance(node.value, ast.Name) \
        and node.value.id == "torch"
