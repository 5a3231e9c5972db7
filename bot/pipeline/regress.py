"""Turn a minimized repro into a PyTorch regression test that fails now and passes once fixed.

Pure: source text in, test source (and a patch) out. The repro's code becomes the body of one test
method, so the method can be pasted into any existing test class: its imports become local imports,
its classes and functions nested definitions, its `torch._inductor.config.x = v` lines
`@torch._inductor.config.patch("x", v)` decorators, and its comparisons `self.assertEqual`. What
the test asserts depends on the category (`rules/regression.yaml`): that the code runs (no graph
break under fullgraph=True, export succeeds, ...) or that compiled results equal eager ones.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass


from bot.core.markdown import one_line
from bot.core.source import unparse
from bot.core.records import Classification
from bot.core.render import render
from bot.core.tables import TestPlan
from bot.core.signature import short_type

CONFIG_MODULES = ("torch._inductor.config", "torch._dynamo.config", "torch._functorch.config")
# Calls that build inputs or drive compilation: never what a test is "about".
BOILERPLATE_CALLS = frozenset({
    "randn", "rand", "randint", "ones", "zeros", "empty", "tensor", "arange", "full", "manual_seed", "compile",
    "print", "range", "len", "super", "backward", "to", "cuda", "cpu", "float", "half", "item", "eval", "train",
    "parameters", "zero_grad", "step", "assert_close", "allclose", "broadcast_tensors", "export", "reset", "clone", "detach", "size",
    "view", "reshape", "Linear", "Sequential", "Module", "ModuleList", "requires_grad_", "format", "append",
})
MAX_NAME = 70


@dataclass(frozen=True)
class GeneratedTest:
    test_name: str
    class_name: str
    assertion: str
    device: str
    method_source: str
    file_source: str
    notes: tuple[str, ...] = ()


# -- reading the repro ---------------------------------------------------------------------------

@dataclass
class ReproParts:
    """A repro script split into what goes where in a test method."""

    imports: list[ast.stmt]
    patches: list[tuple[str, str, str]]  # (config module, dotted key, value source)
    definitions: list[ast.stmt]
    body: list[ast.stmt]
    notes: list[str]


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def split_repro(source: str) -> ReproParts:
    tree = ast.parse(source)
    aliases = _config_aliases(tree.body)
    parts = ReproParts([], [], [], [], [])
    in_order: list[ast.stmt] = []  # the definitions and statements as the source has them
    for node in _flatten_main_guard(tree.body):
        if isinstance(node, ast.Import) and all(a.name == "torch" and not a.asname for a in node.names):
            continue  # every test file imports torch
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            parts.imports.append(node)
        elif (patch := _config_patch(node, aliases)) is not None:
            parts.patches.append(patch)
        elif isinstance(node, DEFINITIONS):
            parts.definitions.append(node)
            in_order.append(node)
        else:
            parts.body.append(_without_print(node))
            in_order.append(parts.body[-1])
    _keep_what_definitions_need_before_them(parts, in_order)
    return parts


def _keep_what_definitions_need_before_them(parts: ReproParts, in_order: list[ast.stmt]) -> None:
    """The method puts the definitions before the statements, but a definition may read, when it is
    defined, a name a statement before it binds (`N_ITEMS = 2000`, then `def __init__(self,
    n=N_ITEMS)`): in the method that name would be bound after the class, a NameError that is not
    the failure (fresh_issues_13's AOTInductor test). Then everything up to the last such definition
    keeps the source's order, ahead of the rest."""
    bound: set[str] = set()
    last_needing = -1
    for index, node in enumerate(in_order):
        if isinstance(node, DEFINITIONS):
            last_needing = index if _read_when_defined(node) & bound else last_needing
        else:
            bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if last_needing < 0:
        return
    head = in_order[: last_needing + 1]
    in_head = {id(node) for node in head}
    parts.body = [node for node in parts.body if id(node) not in in_head]
    parts.definitions = head + [node for node in parts.definitions if id(node) not in in_head]


def _read_when_defined(node: ast.stmt) -> set[str]:
    """The names a def or a class reads when it is defined: decorators, defaults and annotations,
    bases, and a class body's statements (its methods' bodies are read only when they are called)."""
    read: list[ast.AST] = list(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        read += node.bases + [keyword.value for keyword in node.keywords]
        names = set()
        for statement in node.body:
            names |= _read_when_defined(statement) if isinstance(statement, DEFINITIONS) else _loads(statement)
        return names | {name for expr in read for name in _loads(expr)}
    arguments = node.args
    read += arguments.defaults + [d for d in arguments.kw_defaults if d is not None] + [node.returns]
    read += [a.annotation for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    return {name for expr in read if expr is not None for name in _loads(expr)}


def _loads(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _flatten_main_guard(body: list[ast.stmt]) -> list[ast.stmt]:
    flat = []
    for node in body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            flat.extend(node.body)
        else:
            flat.append(node)
    return flat


def _config_aliases(body: list[ast.stmt]) -> dict[str, str]:
    """Names bound to torch's config modules: `torch._inductor.config` itself, `import ... as c`, `from torch._inductor import config`."""
    aliases = {module: module for module in CONFIG_MODULES}
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in CONFIG_MODULES and alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in CONFIG_MODULES:
                    aliases[alias.asname or alias.name] = full
    return aliases


def _config_patch(node: ast.stmt, aliases: dict[str, str]) -> tuple[str, str, str] | None:
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)):
        return None
    if not isinstance(node.value, (ast.Constant, ast.Name, ast.List, ast.Tuple, ast.Dict)) or isinstance(node.value, ast.Name) \
            and node.value.id not in ("True", "False", "None"):
        return None
    dotted = ast.unparse(node.targets[0])
    for alias, module in sorted(aliases.items(), key=lambda item: -len(item[0])):
        if dotted.startswith(alias + "."):
            return module, dotted[len(alias) + 1:], ast.unparse(node.value)
    return None


def _without_print(node: ast.stmt) -> ast.stmt:
    """`print(compiled(x))` -> `compiled(x)`: a test evaluates, it does not print."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
            and node.value.func.id == "print" and len(node.value.args) == 1 and not node.value.keywords:
        return ast.Expr(node.value.args[0])
    return node


# -- asserting -----------------------------------------------------------------------------------

def assert_matches_eager(parts: ReproParts) -> bool:
    """Make the body compare compiled with eager results. False when it found nothing to compare."""
    if _replace_explicit_comparisons(parts):
        return True
    _name_constructed_targets(parts)
    compiled = _compiled_names(parts)
    for index in range(len(parts.body) - 1, -1, -1):
        call = _call_of(parts.body[index], compiled)
        if call is not None:
            comparison = _eager_comparison(call, _compiled_target(call, compiled), parts)
            parts.body[index:index] = comparison
            _replace_call(parts.body, index + len(comparison), call)
            return True
    return False


def _name_constructed_targets(parts: ReproParts) -> None:
    """`torch.compile(nn.Linear(32, 1))`: the module is made where it is compiled, so "run it eager"
    would make another one, with other weights. Each such target is first bound to a name (before
    its statement) that the eager run and the compiled one then share."""
    taken = {node.id for statement in parts.body for node in ast.walk(statement) if isinstance(node, ast.Name)}
    names = (name for name in ["module"] + [f"module{n}" for n in range(2, 100)] if name not in taken)
    index = 0
    while index < len(parts.body):
        statement = parts.body[index]
        made = [node for node in ast.walk(statement) if _compiles(node) and isinstance(node.args[0], ast.Call)] \
            if isinstance(statement, (ast.Expr, ast.Assign)) else []
        for compile_call in made:
            name = next(names)
            parts.body.insert(index, ast.Assign([ast.Name(name)], compile_call.args[0], lineno=0))
            compile_call.args[0] = ast.Name(name)
            index += 1
        index += 1


def _replace_explicit_comparisons(parts: ReproParts) -> bool:
    found = False
    for index, node in enumerate(parts.body):
        pair = _compared_pair(node)
        if pair is not None:
            compared, keywords = pair
            call = ast.Call(ast.Attribute(ast.Name("self"), "assertEqual"), compared, keywords)
            parts.body[index] = ast.Expr(call)
            found = True
    return found


ALLCLOSE_DEFAULTS = {"rtol": 1e-05, "atol": 1e-08}  # torch.allclose's, in its positional order


def _compared_pair(node: ast.stmt):
    """(assertEqual's two compared arguments, tolerance keywords) of `torch.testing.assert_close(a, b)`
    or `assert torch.allclose(a, b)`. allclose broadcasts and assertEqual does not, so its pair is
    `*torch.broadcast_tensors(a, b)`: fresh_issues_7's minimized scan compared a (1, 16) output
    with `torch.zeros(1)`, and a plain assertEqual would have failed on the shapes, fixed or not."""
    call = None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if not ast.unparse(call.func).endswith("assert_close"):
            return None
    elif isinstance(node, ast.Assert) and isinstance(node.test, ast.Call) and ast.unparse(node.test.func).endswith("allclose"):
        call = node.test
    if call is None or len(call.args) < 2:
        return None
    given = {k.arg: k.value for k in call.keywords if k.arg in ALLCLOSE_DEFAULTS}
    compared = [call.args[0], call.args[1]]
    if not ast.unparse(call.func).endswith("assert_close"):  # allclose(a, b, rtol, atol): positional too
        given.update({name: value for name, value in zip(ALLCLOSE_DEFAULTS, call.args[2:4])})
        if given:  # assertEqual takes both or neither: the one left out is allclose's default
            given = {name: given.get(name, ast.Constant(default)) for name, default in ALLCLOSE_DEFAULTS.items()}
        broadcast = ast.Call(ast.Attribute(ast.Name("torch"), "broadcast_tensors"), compared, [])
        compared = [ast.Starred(broadcast, ast.Load())]
    return compared, [ast.keyword(name, value) for name, value in given.items()]


def _compiled_names(parts: ReproParts) -> dict[str, ast.expr]:
    """`name = torch.compile(target, ...)` bindings: name -> target (hoisted to a name if it was a call)."""
    found = {}
    for node in parts.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _compiles(node.value):
            found[node.targets[0].id] = node.value.args[0]
    return found


def _compiles(node: ast.AST) -> bool:
    """`torch.compile(target, ...)` (or `compile(target)` after `from torch import compile`)."""
    return isinstance(node, ast.Call) and ast.unparse(node.func) in ("torch.compile", "compile") and bool(node.args)


def _call_of(node: ast.stmt, compiled: dict[str, ast.expr]) -> ast.Call | None:
    if not isinstance(node, (ast.Expr, ast.Assign)):
        return None
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and _compiled_target(child, compiled) is not None:
            return child
    return None


def _compiled_target(call: ast.Call, compiled: dict[str, ast.expr]) -> ast.expr | None:
    """What `call` runs compiled: `compiled_fn(x)` with a known binding, or `torch.compile(f)(x)` inline."""
    if isinstance(call.func, ast.Name):
        return compiled.get(call.func.id)
    if isinstance(call.func, ast.Call) and ast.unparse(call.func.func) == "torch.compile" and call.func.args:
        return call.func.args[0]
    return None


def _eager_comparison(call: ast.Call, target: ast.expr, parts: ReproParts) -> list[ast.stmt]:
    """Hoist the arguments (random inputs must be the same for both), run eager, run compiled, compare."""
    statements: list[ast.stmt] = []
    args, keywords = [], []
    for position, arg in enumerate(call.args):
        args.append(_hoist(arg, f"arg{position}", statements))
    for keyword in call.keywords:
        keywords.append(ast.keyword(keyword.arg, _hoist(keyword.value, f"kwarg_{keyword.arg}", statements)))
    parts.notes.append(f"compares `{ast.unparse(call.func)}(...)` with eager `{ast.unparse(target)}(...)` on the same inputs")
    statements.append(ast.Assign([ast.Name("expected")], ast.Call(target, args, keywords), lineno=0))
    statements.append(ast.Assign([ast.Name("actual")], ast.Call(call.func, args, keywords), lineno=0))
    statements.append(ast.Expr(ast.Call(ast.Attribute(ast.Name("self"), "assertEqual"),
                                        [ast.Name("actual"), ast.Name("expected")], [])))
    call.args, call.keywords = args, keywords
    return statements


def _hoist(value: ast.expr, name: str, statements: list[ast.stmt]) -> ast.expr:
    if isinstance(value, (ast.Name, ast.Constant)):
        return value
    statements.append(ast.Assign([ast.Name(name)], value, lineno=0))
    return ast.Name(name)


def _replace_call(body: list[ast.stmt], index: int, call: ast.Call) -> None:
    """The original statement now uses `actual` instead of calling again; a bare call disappears."""
    node = body[index]
    if isinstance(node, ast.Expr) and node.value is call:
        del body[index]
        return
    for parent in ast.walk(node):
        for name, value in ast.iter_fields(parent):
            if value is call:
                setattr(parent, name, ast.Name("actual"))
            elif isinstance(value, list):  # an argument: `torch.autograd.grad(compiled(x), x)`
                value[:] = [ast.Name("actual") if item is call else item for item in value]


# -- naming --------------------------------------------------------------------------------------

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


OP_NAMESPACES = ("torch", "F", "torch.nn.functional", "nn.functional", "torch.ops.aten", "torch.special", "torch.linalg")


def main_op(parts: ReproParts) -> str | None:
    """The first distinctive op the repro calls (`relu`, `scatter_add`, `cond`): what the test is about.

    Calls into torch's op namespaces count first, then tensor methods; submodule calls
    (`self.fc1(x)`), constructors and dunders never do."""
    calls = sorted((child for node in parts.definitions + parts.body for child in ast.walk(node) if isinstance(child, ast.Call)),
                   key=lambda call: (getattr(call, "lineno", 0), getattr(call, "col_offset", 0)))  # source order
    defined = _defined_names(parts)

    def distinctive(name: str | None) -> bool:
        return bool(name) and name.isidentifier() and name not in BOILERPLATE_CALLS and name not in defined \
            and not name[:1].isupper() and not name.startswith(("_", "assert"))

    in_namespace = [c.func.attr for c in calls if isinstance(c.func, ast.Attribute) and ast.unparse(c.func.value) in OP_NAMESPACES]
    methods = [c.func.attr for c in calls if isinstance(c.func, ast.Attribute) and ast.unparse(c.func.value) != "self"
               and ast.unparse(c.func.value) not in OP_NAMESPACES]
    return next((slug(name) for name in in_namespace + methods if distinctive(name)), None)


def _defined_names(parts: ReproParts) -> set[str]:
    return {node.name for node in parts.definitions if isinstance(node, DEFINITIONS)}


def test_name(plan: TestPlan, parts: ReproParts, issue_number: int | None, graph_break_title: str | None) -> str:
    what = slug(graph_break_title) if graph_break_title else plan.name
    op = main_op(parts) if plan.op and not graph_break_title else None
    stem = "_".join(p for p in (op, what) if p)[:MAX_NAME].rstrip("_")
    return f"test_{stem}_issue_{issue_number}" if issue_number else f"test_{stem}"


def class_name_for(issue_number: int | None) -> str:
    return f"TestPT2Issue{issue_number}" if issue_number else "TestPT2Regression"


# -- rendering -----------------------------------------------------------------------------------

def generate(source: str, classification: Classification, plan: TestPlan, *, device: str, issue_number: int | None,
             graph_break_title: str | None = None, class_name: str | None = None, reference: str | None = None,
             torch_version: str | None = None) -> GeneratedTest:
    parts = split_repro(source)
    assertion = plan.assertion
    if assertion == "matches_eager" and not assert_matches_eager(parts):
        assertion = "no_error"
        parts.notes.append("no compiled call to compare with eager was found; the test asserts the code runs")
    name = test_name(plan, parts, issue_number, graph_break_title)
    class_name = class_name or class_name_for(issue_number)
    # unittest prints a failing test's docstring; keep the failure's own text out of it, or the
    # verification run would be classified on our words instead of torch's.
    docstring = f"Regression test for issue #{issue_number} (pt2-triage)." if issue_number else "Regression test (pt2-triage)."
    method = render("regression_method.py.j2", name=name, device=device, patches=parts.patches,
                    docstring=docstring_literal(one_line(docstring, 300)),
                    statements=method_statements(parts))
    config_modules = sorted({module for module, _, _ in parts.patches})
    file_source = render("regression_test.py.j2", method=method, class_name=class_name, base=plan.base,
                         device=device, config_modules=config_modules, category=classification.category,
                         reference=one_line(reference or "", 200), signature=one_line(classification.signature, 200),
                         torch_version=one_line(torch_version or "", 40))
    ast.parse(file_source)  # what we emit always parses; a template bug fails here, not in a PR
    return GeneratedTest(test_name=name, class_name=class_name, assertion=assertion, device=device,
                         method_source=method, file_source=file_source, notes=tuple(parts.notes))


def method_statements(parts: ReproParts) -> list[str]:
    """The method body as source blocks; a blank line (empty block) after imports and around definitions."""
    blocks: list[str] = []
    if parts.imports:
        blocks.extend(ast.unparse(n) for n in parts.imports)
        blocks.append("")
    for node in parts.definitions:  # a statement among them is one a definition needs (split_repro)
        blocks.extend((unparse(node), "") if isinstance(node, DEFINITIONS) else (ast.unparse(node),))
    blocks.extend(ast.unparse(n) for n in parts.body)
    while blocks and blocks[-1] == "":
        blocks.pop()
    return blocks or ["pass"]


def docstring_literal(text: str) -> str:
    """A triple-quoted one-line docstring that no text can end early."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"""{escaped}"""'


# -- verifying -----------------------------------------------------------------------------------

def verification_verdict(expected: Classification, run: Classification, run_status: str) -> tuple[str, str]:
    """Does the generated test fail now, for the reason the repro fails? (verdict, sentence)"""
    if run_status == "ok":
        return "passes", "the test passes against the installed torch, so it would not catch this bug"
    if run_status in ("timeout", "limit"):
        return "not_run", f"the test run hit a {run_status}; it was not verified"
    if short_type(run.exception_type) in ("ModuleNotFoundError", "ImportError") and run.category != expected.category:
        return "not_run", f"the test could not start on this runner ({run.signature}); install the `runner` extra"
    if _failure(run.signature) == _failure(expected.signature):  # the category may have been re-filed by the ladder
        return "fails_same", f"fails as expected with {run.signature}"
    if run.category == expected.category:
        return "fails_similar", f"fails with the same category ({run.category}) but another signature: {run.signature}"
    return "fails_differently", f"fails, but as {run.category} ({run.signature}), not {expected.category}"


def _failure(signature: str) -> str:
    """A signature without its leading category: the failure itself (type and message)."""
    return signature.split("|", 1)[1] if "|" in signature else signature
