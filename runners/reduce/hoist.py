"""Hoisting: compile the module where the failure is, alone, on inputs like the ones it was given.

A maintainer reading a 90-line report with a graph break in `Attention.forward` writes
`torch.compile(Attention(cfg), fullgraph=True)(torch.randn(4, 24, 32), mask)` first and shrinks
from there. The passes get there only by shrinking everything around `Attention` until an
instance edit can swap the outer model for it: on the realistic graph-break report that edit came
at 145 s of 156, after 500 runs spent on code it then deleted in one step.

What a module was given is known only at run time, so the Minimizer runs the original once with
the compiler off and the torch probe's `modules` switch (runners/_torch_probe.py): for every
`nn.Module` class the script defines, the arguments of its first construction and of its first
call, as plain specs. `hoisted_programs` turns each record into a candidate program: the script's
definitions and set-up, then the original's entry point (`torch.compile` with its own keywords, or
`torch.export.export`) applied to that class alone, called on fresh tensors of the recorded shapes
and dtypes. The reducer tests them (smallest first) before its first round and goes on from the
first that fails the same way; the others cost a run each. The call keeps the state the script
compiled in (`.eval()`, `torch.no_grad()`, `mark_dynamic` dims). For a difference of values
(`compare`) the program checks the compiled module against the same module in eager
(`compared_call`); a failure across calls is replay.py's.

The records come from the user's script and are not trusted: a class must be one the file
defines, a keyword a plain identifier, a tensor small and of a known dtype, and anything else
makes that record unusable. The programs built from them run in the sandbox like any candidate.
"""
from __future__ import annotations

import ast
import copy
import keyword
import math
from typing import Any, Sequence

from runners.reduce.base import format_source, size_key
from runners.reduce.dead import target_names, without_dead_code
from runners.reduce.shape import is_compile, is_export, torch_imports

MAX_PROGRAMS = 8
MAX_DIMS = 8
MAX_DIM = 1 << 16
MAX_ELEMENTS = 1 << 24
# dtype name -> the factory a fresh tensor of it is made with (values rarely matter to a compiler failure;
# zeros are valid indices, masks and lengths)
FACTORIES = {
    "float32": "randn", "float64": "randn", "float16": "randn", "bfloat16": "randn", "complex64": "randn",
    "int64": "zeros", "int32": "zeros", "int16": "zeros", "int8": "zeros", "uint8": "zeros", "bool": "zeros",
}
DEVICES = ("cpu", "cuda")


class Unrepresentable(ValueError):
    """A recorded value this module cannot write as code."""


def hoisted_programs(tree: ast.Module, records: Sequence[Any], compare: bool = False) -> list[str]:
    """One program per usable record (see the module docstring), smallest first, at most
    MAX_PROGRAMS. With `compare`, each checks its compiled call against the eager one
    (`compared_call`): for a failure that is a difference of values."""
    entry, imports = entry_call(tree), torch_imports(tree)
    if entry is None or (compare and is_export(entry, imports)):
        return []
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    preamble = preamble_of(tree, entry)
    modules = {record.get("class") for record in records if isinstance(record, dict)}
    known = bound_names(preamble)
    programs = []
    for record in records:
        try:
            instance = in_entry_mode(instantiation(record, classes), record)
            specs = spec_items(record.get("call"))
            inputs = [call_input(spec, classes) for spec in specs]
            marks = [dynamic_dims(spec) for spec in specs]
        except (Unrepresentable, AttributeError, TypeError):
            continue
        names = Placeholders()
        bound, args = bound_inputs(inputs, marks, parameter_names(classes[record["class"]]), names,
                                   bind=compare or any(marks))
        if compare:
            model, check = compared_call(tree, entry, instance, args, names)
            tail = [model] + bound + [check]
        else:
            tail = bound + [ast.Expr(packaged(tree, entry_applied(entry, instance, args, known, imports)))]
        tail = under_no_grad(tail, record)
        body = live_statements(copy.deepcopy(preamble), ast.Module(body=tail, type_ignores=[]), modules) + tail
        programs.append(names.named(without_unread(format_source(ast.Module(body=body, type_ignores=[])))))
    return sorted(dict.fromkeys(programs), key=size_key)[:MAX_PROGRAMS]


class Placeholders:
    """Names a program binds (`model`, the inputs), written as unique placeholders until the
    program is final: only then, with the dead code gone (the script's `main` used `model` too),
    is it known which plain names are free."""

    def __init__(self):
        self.preferred: dict[str, str] = {}

    def new(self, preferred: str) -> str:
        placeholder = f"__hoisted_{len(self.preferred)}__"
        self.preferred[placeholder] = preferred
        return placeholder

    def named(self, source: str) -> str:
        """Each placeholder renamed its preferred name, or `name_2`, ... where that is taken."""
        if not self.preferred:
            return source
        tree = ast.parse(source)
        names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
        used = _global_names(tree)
        renamed = {}
        for placeholder, plain in self.preferred.items():
            fresh = next(c for c in (plain if i == 1 else f"{plain}_{i}" for i in range(1, len(used) + 2)) if c not in used)
            used.add(fresh)
            renamed[placeholder] = fresh
        for node in names:
            node.id = renamed.get(node.id, node.id)
        return format_source(tree)


def _global_names(tree: ast.Module) -> set[str]:
    """The names a new module-level binding could clash with: those bound or read outside any
    function, and those a function reads without binding them (a function's own parameters and
    locals, `x` in `forward(self, x)`, are its own)."""
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    inside = {id(node) for function in functions for node in ast.walk(function) if node is not function}
    taken = set()
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS[:3]):
            taken.add(node.name)
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name):
            taken.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            taken |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    for function in functions:
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)} | {
            n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        taken |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
    return taken


def parameter_names(cls: ast.ClassDef) -> list[str]:
    """The names `forward` gives its positional inputs (what the bound inputs are called)."""
    forward = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        return []
    return [a.arg for a in forward.args.posonlyargs + forward.args.args][1:]


def bound_inputs(inputs: list[ast.expr], marks: list[list[int]], params: list[str], names: Placeholders,
                 bind: bool) -> tuple[list[ast.stmt], list[ast.expr]]:
    """With `bind`, each input bound to a name (the forward's parameter name) and its recorded
    `mark_dynamic` dims marked: (those statements, the names); else ([], the inputs as they are)."""
    if not bind:
        return [], inputs
    statements, args = [], []
    for index, (value, dims) in enumerate(zip(inputs, marks)):
        name = names.new(params[index] if index < len(params) else "x")
        statements.append(assignment(name, value))
        statements += [ast.Expr(ast.Call(func=ast.Attribute(value=_torch_attr("_dynamo"), attr="mark_dynamic", ctx=ast.Load()),
                                         args=[ast.Name(id=name, ctx=ast.Load()), ast.Constant(dim)], keywords=[]))
                       for dim in dims]
        args.append(ast.Name(id=name, ctx=ast.Load()))
    return statements, args


def dynamic_dims(spec: Any) -> list[int]:
    """The dims a tensor input was given with `torch._dynamo.mark_dynamic` (validated)."""
    if not isinstance(spec, dict) or "tensor" not in spec or spec.get("dynamic") is None:
        return []
    dims, shape = spec["dynamic"], spec["tensor"]
    if (not isinstance(dims, list) or not isinstance(shape, list) or len(dims) > MAX_DIMS
            or not all(type(d) is int and 0 <= d < len(shape) for d in dims)):
        raise Unrepresentable("dynamic dims")
    return sorted(set(dims))


def _at_entry(record: dict) -> dict:
    """The module's state when the script reached its entry point (training mode, grad mode), as
    the probe recorded it; {} when absent or malformed."""
    state = record.get("at_entry")
    return state if isinstance(state, dict) else {}


def in_entry_mode(instance: ast.expr, record: dict) -> ast.expr:
    """`C(...).eval()` when the module was in eval mode at the entry point (dropout and batch
    norm compile differently in training mode)."""
    if _at_entry(record).get("training") is not False:
        return instance
    return ast.Call(func=ast.Attribute(value=instance, attr="eval", ctx=ast.Load()), args=[], keywords=[])


def under_no_grad(statements: list[ast.stmt], record: dict, calls: int = 1) -> list[ast.stmt]:
    """The last `calls` statements inside `with torch.no_grad():` when grad was off at the entry
    point (an inference graph, not a training one)."""
    if _at_entry(record).get("grad") is not False:
        return statements
    guard = ast.withitem(context_expr=ast.Call(func=_torch_attr("no_grad"), args=[], keywords=[]))
    return statements[:-calls] + [ast.With(items=[guard], body=statements[-calls:])]


# torch's accuracy minifier's tolerance (torch._dynamo.config.repro_tolerance), for a script whose
# own check states none
DEFAULT_TOLERANCE = 1e-3
# closeness checks -> their own (rtol, atol) defaults, for the one a check leaves out (assert_close
# takes both or neither)
CHECKS = {"assert_close": (DEFAULT_TOLERANCE, DEFAULT_TOLERANCE), "allclose": (1e-5, 1e-8), "isclose": (1e-5, 1e-8),
          "assert_allclose": (1e-7, 0.0)}


def compared_call(tree: ast.Module, entry: ast.expr, instance: ast.expr, args: list[ast.expr],
                  names: Placeholders) -> tuple[ast.stmt, ast.stmt]:
    """`model = C(...)`, and `torch.testing.assert_close(torch.compile(model)(x), model(x), rtol=..., atol=...)`
    on the bound inputs: the compiled call checked against the eager one, at the tolerance of the
    script's own check (else torch's accuracy minifier's)."""
    model = names.new("model")
    compiled = entry_applied(entry, ast.Name(id=model, ctx=ast.Load()), args, imports=torch_imports(tree))
    eager = ast.Call(func=ast.Name(id=model, ctx=ast.Load()), args=copy.deepcopy(args), keywords=[])
    check = ast.Call(func=ast.Attribute(value=_torch_attr("testing"), attr="assert_close", ctx=ast.Load()),
                     args=[compiled, eager], keywords=tolerance_of(tree))
    return assignment(model, instance), ast.Expr(check)


def tolerance_of(tree: ast.Module) -> list[ast.keyword]:
    """`rtol=..., atol=...`: the literal ones of the script's first closeness check that states
    any (the other from that check's defaults), else DEFAULT_TOLERANCE for both."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in CHECKS:
            stated = {k.arg: k.value.value for k in node.keywords if k.arg in ("rtol", "atol")
                      and isinstance(k.value, ast.Constant) and type(k.value.value) in (int, float)}
            if stated:
                defaults = dict(zip(("rtol", "atol"), CHECKS[_called_name(node)]))
                return [ast.keyword(arg=name, value=ast.Constant(stated.get(name, defaults[name]))) for name in defaults]
    return [ast.keyword(arg=name, value=ast.Constant(DEFAULT_TOLERANCE)) for name in ("rtol", "atol")]


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def assignment(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def without_unread(source: str) -> str:
    """What the program leaves unread deleted (the outer model and the training loop, mostly), to a
    fixpoint: the smallest of them is then the innermost module, which is tried first."""
    for _ in range(20):
        smaller = without_dead_code(source)
        if smaller == source:
            break
        source = smaller
    return source


def entry_call(tree: ast.Module) -> ast.expr | None:
    """The first PT2 entry point in the file: a `torch.compile` call or decorator, or a
    `torch.export.export` call (source order), under the names the file imports them as too."""
    imports = torch_imports(tree)
    found = [node for node in ast.walk(tree) if _is_entry(node, imports)]
    return min(found, key=lambda node: (node.lineno, node.col_offset), default=None)


def _is_entry(node: ast.AST, imports: dict[str, str]) -> bool:
    if isinstance(node, ast.Call):
        return is_compile(node, imports) or is_export(node, imports)
    return isinstance(node, (ast.Attribute, ast.Name)) and is_compile(node, imports)


def entry_applied(entry: ast.expr, instance: ast.expr, inputs: list[ast.expr],
                  known: frozenset[str] = frozenset(), imports: dict[str, str] | None = None) -> ast.expr:
    """The entry point as the original wrote it (callee and keywords), applied to `instance` alone:
    `torch.compile(C(...), fullgraph=True)(x, y)` or `torch.export.export(C(...), (x, y))`. An
    export's `dynamic_shapes` stay only when written out from literals and `known` names, those the
    program binds before the call (`{"images": {0: batch}}` after `batch = Dim("batch")`, which may be
    what fails); a name of the original's inputs would be unbound."""
    if isinstance(entry, ast.Call) and is_export(entry, imports):
        keywords = [copy.deepcopy(k) for k in entry.keywords if k.arg not in (None, "dynamic_shapes", "args", "mod")
                    or (k.arg == "dynamic_shapes" and _reads_only(k.value, known))]
        return ast.Call(func=copy.deepcopy(entry.func),
                        args=[instance, ast.Tuple(elts=inputs, ctx=ast.Load())], keywords=keywords)
    if isinstance(entry, ast.Call):
        keywords = [copy.deepcopy(k) for k in entry.keywords if k.arg not in (None, "model")]
        compiled = ast.Call(func=copy.deepcopy(entry.func), args=[instance], keywords=keywords)
    else:
        compiled = ast.Call(func=copy.deepcopy(entry), args=[instance], keywords=[])
    return ast.Call(func=compiled, args=inputs, keywords=[])


def _reads_only(value: ast.expr, names: frozenset[str]) -> bool:
    return all(node.id in names for node in ast.walk(value) if isinstance(node, ast.Name))


def bound_names(statements: list[ast.stmt]) -> frozenset[str]:
    """The names the set-up binds at its own level: imports, definitions, and the targets of the rest."""
    names = {alias.asname or alias.name.split(".")[0] for node in statements
             if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    names |= {node.name for node in statements if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {name.id for node in statements if not isinstance(node, DEFINITIONS)
              for name in ast.walk(node) if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)}
    return frozenset(names)


def packaged(tree: ast.Module, applied: ast.Call) -> ast.expr:
    """An export handed on to AOTInductor as the original hands its own
    (`torch._inductor.aoti_compile_and_package(ep, ...)`), where it does: an AOTInductor failure
    happens there, not in the export. Keywords that read the script's names are left out
    (`package_path=path`); literal ones stay (`inductor_configs={...}` may be what fails)."""
    if not is_export(applied, torch_imports(tree)):
        return applied
    package = next((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and node.func.attr == "aoti_compile_and_package"), None)
    if package is None:
        return applied
    keywords = [copy.deepcopy(k) for k in package.keywords if k.arg is not None and _is_literal(k.value)]
    return ast.Call(func=copy.deepcopy(package.func), args=[applied], keywords=keywords)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True


def preamble_of(tree: ast.Module, entry: ast.expr) -> list[ast.stmt]:
    """What runs before the entry point: the file's definitions and imports wherever they are, its
    other top-level statements before the one holding the entry, and, when that holder is a
    function without required parameters (`main()`) or the `if __name__ == "__main__":` block,
    its own statements before the entry (seeds, config switches, the objects the call needs)."""
    holder_index = next(i for i, node in enumerate(tree.body) if _contains(node, entry))
    holder = tree.body[holder_index]
    kept = [node for i, node in enumerate(tree.body)
            if not _is_main_guard(node) and (i < holder_index or isinstance(node, DEFINITIONS))]
    return kept + _leading_statements(holder, entry)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _leading_statements(holder: ast.stmt, entry: ast.expr) -> list[ast.stmt]:
    if isinstance(holder, ast.FunctionDef):
        params = holder.args
        if len(params.posonlyargs + params.args) > len(params.defaults) or any(d is None for d in params.kw_defaults):
            return []
    elif not _is_main_guard(holder):
        return []
    leading = []
    for node in holder.body:
        if _contains(node, entry):
            break
        if _early_exit(node):
            continue  # the run reached the entry, so it did not return there (`if not cfg.export: return`)
        if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)) for n in ast.walk(node)):
            return []
        leading.append(node)
    return leading


def _early_exit(node: ast.stmt) -> bool:
    """`if <test>: return` (no value that calls anything, no `else`)."""
    return (isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 and isinstance(node.body[0], ast.Return)
            and not any(isinstance(n, ast.Call) for n in ast.walk(node.body[0])))


def _contains(node: ast.AST, target: ast.AST) -> bool:
    return any(n is target for n in ast.walk(node))


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__")


def live_statements(statements: list[ast.stmt], last: ast.stmt, modules: set[str]) -> list[ast.stmt]:
    """The set-up the hoisted call still needs. Gone: what uses the script's own model objects (a
    name bound to an instance of one of `modules`, and whatever is computed from one: the
    optimizer, the training loop, an eager check and its print), then the plain name assignments
    nothing after them reads. Definitions stay (the dead-code pass judges them); statements with
    other effects (seeds, config switches) stay."""
    return _read_later(_without_model_uses(statements, modules), last)


def _without_model_uses(statements: list[ast.stmt], modules: set[str]) -> list[ast.stmt]:
    derived: set[str] = set()
    kept = []
    for node in statements:
        if isinstance(node, DEFINITIONS):
            kept.append(node)
            continue
        builds_model = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in modules
                           for n in ast.walk(node))
        if builds_model or _names_read(node) & derived:
            derived |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            continue
        kept.append(node)
    return kept


def _read_later(statements: list[ast.stmt], last: ast.stmt) -> list[ast.stmt]:
    live = _names_read(last)
    kept = []
    for node in reversed(statements):
        targets = _assigned_names(node)
        if targets is not None and not targets & live:
            continue
        kept.append(node)
        if not isinstance(node, DEFINITIONS) or _defined_name(node) in live:
            live |= _names_read(node)  # what an unused `def main()` reads keeps nothing alive
    return kept[::-1]


def _defined_name(node: ast.stmt) -> str | None:
    return node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None


def _assigned_names(node: ast.stmt) -> set[str] | None:
    """The names a plain `a = ...` / `a, b = ...` / `a: T = ...` binds; None for any other statement."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else None
    names = [name for target in targets or [] for name in target_names(target)]
    return None if targets is None or None in names else set(names)


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def instantiation(record: dict, classes: dict[str, ast.ClassDef]) -> ast.Call:
    """`C(args..., key=value...)` for the class a record names, from its recorded construction."""
    name = record.get("class")
    if name not in classes:
        raise Unrepresentable(f"not a class of the file: {name!r}")
    init_kw = {} if record.get("init_kw") is None else record["init_kw"]
    if not isinstance(init_kw, dict):
        raise Unrepresentable("keywords are not a mapping")
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()),
                    args=[value_expr(spec, classes) for spec in spec_items(record.get("init"))],
                    keywords=[ast.keyword(arg=_identifier(key), value=value_expr(spec, classes))
                              for key, spec in init_kw.items()])


def call_input(spec: Any, classes: dict[str, ast.ClassDef]) -> ast.expr:
    """The code for one argument of the recorded call. An argument the probe could not describe
    (`{"other": "BlockMask"}`: a library's object, made by code the hoist cannot replay) is given
    as `None`. Masks, caches and hooks that a module takes are mostly optional, and the run decides:
    the sliding-window decoder of the flex-attention report passed a `BlockMask` to every module,
    so no record was usable and the search started from the whole 96-line script."""
    if isinstance(spec, dict) and set(spec) == {"other"}:
        return ast.Constant(None)
    return value_expr(spec, classes)


def value_expr(spec: Any, classes: dict[str, ast.ClassDef], depth: int = 0) -> ast.expr:
    """The code for one recorded value (runners/_torch_probe.py `_spec`)."""
    if not isinstance(spec, dict) or depth > 4:
        raise Unrepresentable("not a spec")
    if "tensor" in spec:
        return tensor_expr(spec)
    if "value" in spec:
        return _literal(spec["value"])
    if "torch_dtype" in spec:
        return _torch_attr(_dtype(spec["torch_dtype"]))
    if "seq" in spec:
        items = [value_expr(item, classes, depth + 1) for item in spec_items(spec.get("items"))]
        return ast.List(elts=items, ctx=ast.Load()) if spec["seq"] == "list" else ast.Tuple(elts=items, ctx=ast.Load())
    if "dict" in spec and isinstance(spec["dict"], dict):
        return ast.Dict(keys=[ast.Constant(_string(key)) for key in spec["dict"]],
                        values=[value_expr(value, classes, depth + 1) for value in spec["dict"].values()])
    if "dataclass" in spec and spec["dataclass"] in classes and isinstance(spec.get("fields"), dict):
        defaults = _field_defaults(classes[spec["dataclass"]])
        return ast.Call(func=ast.Name(id=spec["dataclass"], ctx=ast.Load()), args=[],
                        keywords=[ast.keyword(arg=_identifier(key), value=value_expr(value, classes, depth + 1))
                                  for key, value in spec["fields"].items() if defaults.get(key, _NONE) != value])
    raise Unrepresentable(f"no code for {str(spec)[:60]}")


_NONE = object()


def _field_defaults(cls: ast.ClassDef) -> dict[str, dict]:
    """A dataclass's literal field defaults, as value specs (`dim: int = 32` -> {"value": 32}), so
    that only the fields the script changed are written out (`Config()` rather than all of them)."""
    defaults = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            try:
                defaults[node.target.id] = _literal_spec(ast.literal_eval(_field_default(node.value)))
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return defaults


def _field_default(value: ast.expr) -> ast.expr:
    """The default a field declares: `= 3`, `= field(default=3)`, or
    `= field(default_factory=lambda: [8, 16])` (the lambda's body)."""
    if not (isinstance(value, ast.Call) and _called_name(value) == "field"):
        return value
    keywords = {k.arg: k.value for k in value.keywords}
    factory = keywords.get("default_factory")
    if isinstance(factory, ast.Lambda) and not factory.args.args:
        return factory.body
    return keywords.get("default", value)


def _literal_spec(value: Any) -> dict:
    """A literal as the probe would record it (runners/_torch_probe.py `_spec`)."""
    if type(value) in (list, tuple):
        return {"seq": type(value).__name__, "items": [_literal_spec(item) for item in value]}
    if type(value) is dict:
        return {"dict": {key: _literal_spec(item) for key, item in value.items()}}
    return {"value": value}


def tensor_expr(spec: dict) -> ast.expr:
    """`torch.randn(4, 24, 32)`, `torch.zeros(4, 24, dtype=torch.bool)`: a fresh tensor of the
    recorded shape, dtype and device (and `requires_grad` when it had it)."""
    shape, dtype, device = spec.get("tensor"), _dtype(spec.get("dtype")), spec.get("device", "cpu")
    if (not isinstance(shape, list) or len(shape) > MAX_DIMS
            or not all(type(n) is int and 0 <= n <= MAX_DIM for n in shape) or math.prod(shape) > MAX_ELEMENTS):
        raise Unrepresentable("tensor shape")
    if device not in DEVICES:
        raise Unrepresentable(f"device {device!r}")
    factory = FACTORIES[dtype]
    args = [ast.Constant(n) for n in shape] or [ast.Tuple(elts=[], ctx=ast.Load())]
    keywords = []
    if not (factory == "randn" and dtype == "float32"):
        keywords.append(ast.keyword(arg="dtype", value=_torch_attr(dtype)))
    if device != "cpu":
        keywords.append(ast.keyword(arg="device", value=ast.Constant(device)))
    if spec.get("grad") is True and factory == "randn":
        keywords.append(ast.keyword(arg="requires_grad", value=ast.Constant(True)))
    return ast.Call(func=_torch_attr(factory), args=args, keywords=keywords)


def _dtype(name: Any) -> str:
    if name not in FACTORIES:
        raise Unrepresentable(f"dtype {name!r}")
    return name


def _torch_attr(name: str) -> ast.Attribute:
    return ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()), attr=name, ctx=ast.Load())


def _literal(value: Any) -> ast.expr:
    if value is None or type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
        return ast.Constant(value)
    raise Unrepresentable("literal")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise Unrepresentable("not a string")
    return value


def _identifier(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise Unrepresentable(f"keyword {name!r}")
    return name


def spec_items(value: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Unrepresentable("not a list")
    return value
