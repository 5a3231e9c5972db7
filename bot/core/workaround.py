"""Rewrites of a repro that show a documented workaround working (pure; a run verifies them).

A `limitation` disposition (bot/rules/disposition.yaml) names a workaround kind:

  torch_cond              data-dependent control flow (`if y.sum() > 0: return a` / `else: return b`,
                          or branches that assign the same names) becomes
                          `torch.cond(pred, true_fn, false_fn, operands)`, the construct Dynamo traces
  capture_scalar_outputs  `torch._dynamo.config.capture_scalar_outputs = True` before the code runs,
                          so `.item()` becomes an unbacked symbol instead of a graph break
  allow_unspec_int_on_nn_module
                          `torch._dynamo.config.allow_unspec_int_on_nn_module = True` before the code
                          runs, so a module's changing int attribute is dynamic, not a recompile each
  maybe_mark_dynamic      each `torch._dynamo.mark_dynamic(x, d)` call becomes `maybe_mark_dynamic`,
                          which lets the traced code specialize the dimension instead of raising
  fallback_random         `torch._inductor.config.fallback_random = True` before the code runs, so
                          Inductor draws random numbers the way eager does
  hook_guards             `torch._dynamo.config.skip_nnmodule_hook_guards = False` before the code
                          runs, so a hook registered after the first compiled call is seen
  freezing_off            the script's own `freezing = True` (an assignment or a `config.patch`) set
                          to False, so Inductor keeps the weights as inputs instead of constants

Each rewrite returns the new source, or None when the code does not have the shape it handles;
nothing is claimed until bot/pipeline/ladder.py has run the rewrite and seen it pass.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

CAPTURE_SCALARS = "torch._dynamo.config.capture_scalar_outputs = True"
# Where the failing line is: Dynamo's "from user code" frame or its "Caused by: ... # repro.py:8".
USER_LINE = (re.compile(r'from user code:\s*\n\s*File "[^"]*", line (\d+)'),
             re.compile(r"Caused by: .*?#\s*\S*?:(\d+) in "))
TRUE_FN, FALSE_FN = "cond_true_branch", "cond_false_branch"
# Newer torch names only the place: `Caused by: (sandbox/repro.py:46 in forward)` (the path cut short).
CAUSED_BY_PLACE = re.compile(r"^Caused by: \(([^\s()]*repro\.py):(\d+) in (\w+)\)[ \t]*$", re.M)


@dataclass(frozen=True)
class Rewrite:
    kind: str
    source: str
    note: str  # what was changed, in one sentence


def failing_line(output: str) -> int | None:
    """The user-code line Dynamo points at (the last such mention: the innermost frame)."""
    found = [int(m.group(1)) for pattern in USER_LINE for m in pattern.finditer(output)]
    return found[-1] if found else None


def with_caused_by_source(output: str, script: str | None) -> str:
    """`output` with each `Caused by: (…repro.py:N in f)` completed by line N of the script that
    ran, in the form older torch printed (`Caused by: if n == 0:  # repro.py:46 in f`): the rules
    that read the statement a data-dependent guard came from (disposition.yaml) and `failing_line`
    then read the newer form too."""
    if script is None:
        return output
    lines = script.splitlines()

    def completed(match: re.Match) -> str:
        number = int(match.group(2))
        if not 1 <= number <= len(lines) or not lines[number - 1].strip():
            return match.group(0)
        return f"Caused by: {lines[number - 1].strip()}  # {match.group(1)}:{number} in {match.group(3)}"

    return CAUSED_BY_PLACE.sub(completed, output)


# Documented Dynamo switches a limitation's workaround turns on: (the line, what it changes).
CONFIG_SWITCHES = {
    "capture_scalar_outputs": (CAPTURE_SCALARS, "so `.item()` is traced instead of breaking the graph"),
    "allow_unspec_int_on_nn_module": ("torch._dynamo.config.allow_unspec_int_on_nn_module = True",
                                      "so an int attribute of a module that changes between calls is traced as a "
                                      "dynamic value instead of a constant that recompiles"),
    "fallback_random": ("torch._inductor.config.fallback_random = True",
                        "so Inductor draws random numbers with eager's generator instead of its own"),
    "hook_guards": ("torch._dynamo.config.skip_nnmodule_hook_guards = False",
                    "so compiled code is guarded on the modules' hooks and a hook added later recompiles it"),
}


def config_switch(kind: str, script: str) -> Rewrite | None:
    """The script with the switch `kind` (CONFIG_SWITCHES) set after its imports; None when it already is."""
    line, effect = CONFIG_SWITCHES[kind]
    setting, value = line.rsplit(".", 1)[1].split(" = ")
    if re.search(rf"{setting}\s*=\s*{value}", script):
        return None
    tree = ast.parse(script)
    after_imports = max((node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))), default=0)
    lines = script.split("\n")
    lines.insert(after_imports, ("import torch._dynamo\n" if "import torch" not in script else "") + line)
    return Rewrite(kind, "\n".join(lines), f"Added `{line}` after the imports, {effect}")


FREEZING_ON = (re.compile(r"(\bfreezing\s*=\s*)True\b"), re.compile(r"""(["']freezing["']\s*,\s*)True\b"""))


def freezing_off(script: str) -> Rewrite | None:
    """The script with each `freezing = True` it sets (`torch._inductor.config.freezing = True`,
    `config.patch(freezing=True)`, `config.patch("freezing", True)`) made False; None when it sets none.
    A switch added after the imports would not do: the script's own line comes later and wins."""
    rewritten = script
    for pattern in FREEZING_ON:
        rewritten = pattern.sub(r"\1False", rewritten)
    if rewritten == script:
        return None
    return Rewrite("freezing_off", rewritten, "Set the script's `torch._inductor.config.freezing = True` to `False`, "
                   "so Inductor keeps the weights as inputs of the compiled code instead of folding them in as constants")


def maybe_mark_dynamic(script: str) -> Rewrite | None:
    """Each `<module>.mark_dynamic(...)` call as `<module>.maybe_mark_dynamic(...)` (the rest of the
    text untouched); None when there is none (a bare `mark_dynamic` imported by name is left to the
    user: renaming it means touching the import too)."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return None
    lines = script.split("\n")
    names = sorted(((node.func.end_lineno, node.func.end_col_offset) for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "mark_dynamic"),
                   reverse=True)
    if not names:
        return None
    for line, end in names:  # from the end, so earlier offsets stay right
        raw = lines[line - 1].encode("utf-8")
        cut = len(raw[:end].decode("utf-8", errors="replace")) - len("mark_dynamic")  # ast's offsets count bytes
        lines[line - 1] = lines[line - 1][:cut] + "maybe_" + lines[line - 1][cut:]
    rows = sorted({line for line, _ in names})
    places = ("line " if len(rows) == 1 else "lines ") + ", ".join(map(str, rows))
    return Rewrite("maybe_mark_dynamic", "\n".join(lines),
                   f"`mark_dynamic` became `maybe_mark_dynamic` ({places}), so the traced code may specialize the dimension")


def capture_scalar_outputs(script: str) -> Rewrite | None:
    return config_switch("capture_scalar_outputs", script)


def torch_cond(script: str, line: int | None) -> Rewrite | None:
    """The data-dependent `if` at `line` (else the first `if` on a tensor inside a function) as torch.cond."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return None
    found = _find_if(tree, line)
    if found is None:
        return None
    function, body, index = found
    replacement = _cond_statements(function, body, index)
    if replacement is None:
        return None
    stmt = body[index]
    consumed = body[index:] if _returns(stmt.body) and not stmt.orelse else [stmt]
    indent = " " * stmt.col_offset
    text = "\n".join(indent + line if line else line for new in replacement
                     for line in ast.unparse(ast.fix_missing_locations(new)).split("\n"))
    lines = script.split("\n")
    lines[stmt.lineno - 1:consumed[-1].end_lineno] = text.split("\n")
    return Rewrite("torch_cond", "\n".join(lines),
                   f"The `if` at line {stmt.lineno} became `torch.cond`, its branches two functions of the values they read")


def _find_if(tree: ast.Module, line: int | None):
    """(enclosing function, the statement list holding the `if`, its index) or None."""
    candidates = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in _bodies(function):
            for index, stmt in enumerate(body):
                if isinstance(stmt, ast.If):
                    candidates.append((function, body, index))
    if line is not None:
        exact = [c for c in candidates if c[1][c[2]].lineno == line]
        if exact:
            return exact[0]
    tensorish = [c for c in candidates if _looks_data_dependent(c[1][c[2]].test)]
    return tensorish[0] if line is None and tensorish else None


def _bodies(function: ast.AST):
    """The statement lists of a function (not of functions nested in it)."""
    stack = [function.body]
    while stack:
        body = stack.pop()
        yield body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    stack.append(inner)


def _looks_data_dependent(test: ast.expr) -> bool:
    text = ast.unparse(test)
    return bool(re.search(r"\.(item|sum|any|all|max|min|mean|norm)\(|torch\.|\.shape\[", text))


def _predicate(test: ast.expr) -> ast.expr:
    """The condition as a tensor: `.item()` and `bool(...)` taken off (torch.cond wants a boolean tensor)."""
    class Strip(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call):
            self.generic_visit(node)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "item" and not node.args:
                return node.func.value
            if isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1:
                return node.args[0]
            return node

    return Strip().visit(copy.deepcopy(test))


def _returns(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return) and body[-1].value is not None


def _cond_statements(function, body: list[ast.stmt], index: int) -> list[ast.stmt] | None:
    stmt = body[index]
    if _returns(stmt.body):
        rest = stmt.orelse or body[index + 1:]
        if not _returns(rest):
            return None
        return _build(function, stmt, stmt.body, rest, target=None)
    assigned = sorted(_assigned(stmt.body) | _assigned(stmt.orelse))
    if not assigned or _has_flow(stmt.body) or _has_flow(stmt.orelse):
        return None
    result = ast.Tuple([ast.Name(n, ast.Load()) for n in assigned], ast.Load()) if len(assigned) > 1 else ast.Name(assigned[0], ast.Load())
    true_body = list(stmt.body) + [ast.Return(result)]
    false_body = list(stmt.orelse) + [ast.Return(result)]
    return _build(function, stmt, true_body, false_body, target=assigned)


def _build(function, stmt: ast.If, true_body, false_body, target: list[str] | None) -> list[ast.stmt]:
    operands = _operands(true_body + false_body, _defined_before(function, stmt))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in operands], kwonlyargs=[], kw_defaults=[], defaults=[])
    true_fn = ast.FunctionDef(TRUE_FN, args, list(true_body), [], None, type_params=[])
    false_fn = ast.FunctionDef(FALSE_FN, args, list(false_body), [], None, type_params=[])
    call = ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "cond", ast.Load()),
                    [_predicate(stmt.test), ast.Name(TRUE_FN, ast.Load()), ast.Name(FALSE_FN, ast.Load()),
                     ast.Tuple([ast.Name(n, ast.Load()) for n in operands], ast.Load())], [])
    if target is None:
        final = ast.Return(call)
    else:
        names = [ast.Name(n, ast.Store()) for n in target]
        final = ast.Assign([ast.Tuple(names, ast.Store()) if len(names) > 1 else names[0]], call)
    return [true_fn, false_fn, final]


def _assigned(body: list[ast.stmt]) -> set[str]:
    return {t.id for stmt in body if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(t, ast.Name)}


def _has_flow(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.Raise))
               for stmt in body for node in ast.walk(stmt))


def _defined_before(function, stmt: ast.If) -> set[str]:
    """The function's parameters and the names it assigns before `stmt`."""
    params = {a.arg for a in function.args.args + function.args.kwonlyargs + function.args.posonlyargs}
    return params | {node.id for node in ast.walk(function) if isinstance(node, ast.Name)
                     and isinstance(node.ctx, ast.Store) and node.lineno < stmt.lineno}


def _operands(body: list[ast.stmt], defined: set[str]) -> list[str]:
    """The locals defined before the `if` that the branches read, in order of first use, `self`
    excepted: torch.cond passes them as operands, and the branches close over the module."""
    seen: list[str] = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in defined and node.id != "self" and node.id not in seen:
                seen.append(node.id)
    return seen
