"""How a call binds a function's parameters, and an expression read with them replaced by what the
call gives (shared by the rewrites that inline or fold code and by the shape rule, which reads an
export's examples through the helper that returns them)."""
from __future__ import annotations

import ast
import copy


def bind_arguments(args: ast.arguments, call: ast.Call, skip_self: bool = False) -> dict[str, ast.expr] | None:
    """Parameter name -> the expression the call gives it (or its default); None when the call
    does not fit simply (starred arguments, *args/**kwargs, a missing or unknown argument)."""
    positional = (args.posonlyargs + args.args)[1 if skip_self else 0:]
    if (args.vararg or args.kwarg or args.kwonlyargs or any(isinstance(a, ast.Starred) for a in call.args)
            or len(call.args) > len(positional) or (skip_self and not (args.posonlyargs + args.args))):
        return None
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(args.defaults):], args.defaults))
    binding = {p.arg: value for p, value in zip(positional, call.args)}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg in binding or keyword.arg not in {p.arg for p in positional}:
            return None
        binding[keyword.arg] = keyword.value
    for p in positional:
        if p.arg not in binding:
            if p.arg not in defaults:
                return None
            binding[p.arg] = defaults[p.arg]
    return binding


def substitute(expression: ast.expr, binding: dict[str, ast.expr]) -> ast.expr:
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return copy.deepcopy(binding[node.id]) if isinstance(node.ctx, ast.Load) and node.id in binding else node
    return Substitute().visit(copy.deepcopy(expression))
