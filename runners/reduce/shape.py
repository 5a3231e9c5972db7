"""What a PT2 repro must keep to stay the same kind of repro, whatever the predicate says.

A predicate only checks that a candidate still fails the same way. Some failures survive edits
that change what the repro is about: `if y.sum() > 0` under `fullgraph=True` still breaks the
graph as `if torch.ones(1):` called with an int, but that repro no longer shows a branch on the
input. A maintainer keeps three things, so the reducer never runs a candidate that drops them:

- **tensor inputs stay tensors**: when the original passes a tensor to a compiled callable (a
  `torch.compile(...)` result, a function decorated with it, or `torch.export.export`'s example
  inputs, where an example the rule cannot follow counts as one), some compiled call still receives one, no compiled call receives a bare number the
  original never passed, and none receives one at an argument position where the original passed
  only tensors (a sampler's `model(x, sigma)` passes a float, but `x` stays a tensor);
- **the entry point stays**: a repro that calls `torch.compile` or `torch.export` keeps calling it;
- **a branch on the input stays one**, for a failure a branch causes (the category's
  `minimize_branch` in bot/rules/categories.yaml: a graph break, an export failure, dynamic
  shapes): when code the compiler traces has an `if`/`while` whose test reads that code's
  parameters (directly or through names computed from them), the candidate's traced code has one
  too. `if (x.abs() > self.limit).any()` under `fullgraph=True` otherwise became `if torch.ones(1):`,
  the same graph break with nothing left of the input in it; an Inductor C++ error's repro need
  not keep an incidental `if` of the model it was found in (`Shape.without_branch`);
- **the input stays read**: when the traced code reads its inputs, the candidate's does too. A
  `forward` that ignores its input fails some other way, if at all: `export_dim_specialized`'s
  reshape that specializes the batch became, under a peer reducer, `def forward(self, images): pass`
  exported with `torch.randn(0)`, whose size-0 batch is specialized by torch.export itself.
- **a dynamic dimension keeps a size PT2 does not specialize**: a dimension marked dynamic
  (`torch._dynamo.mark_dynamic(x, 1)`, an exported input's `dynamic_shapes` entry) whose example
  size is 0 or 1 is specialized by design (0/1 specialization), so a candidate that makes it 0 or 1
  where the original did not reproduces that design, not the user's code: under the read rule
  above, a peer reducer kept `tokens.reshape(0)` on `torch.randn(0)` for the same reason.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from dataclasses import dataclass

from runners.reduce.calls import bind_arguments, substitute

ENTRY_POINTS = ("compile", "export")
MAX_FOLLOW = 8  # names followed to their values, and method calls through them (`x = x.float()` is a cycle)
# Calls that make tensors (torch.<name>(...)); methods on a tensor (`.to`, `.cuda`, ...) keep one.
TENSOR_FACTORIES = frozenset({
    "randn", "rand", "randint", "randn_like", "rand_like", "ones", "zeros", "ones_like", "zeros_like", "empty",
    "empty_like", "full", "full_like", "tensor", "as_tensor", "from_numpy", "arange", "linspace", "eye", "randperm",
    "stack", "cat", "normal", "bernoulli", "empty_strided",
})
# nn.Module methods that return the module itself (`Net().eval()` is still the instance)
SELF_RETURNING_METHODS = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "double", "half", "bfloat16",
                                    "requires_grad_"})
TENSOR_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "long", "int", "bool",
                            "contiguous", "requires_grad_", "clone", "detach", "view", "reshape", "t", "T"})


@dataclass(frozen=True)
class Shape:
    """The facts of a repro the reducer keeps (see the module docstring)."""

    entry_points: frozenset[str]  # "compile" and/or "export"
    tensor_input: bool  # some compiled call receives a tensor
    number_input: bool  # some compiled call receives a bare number
    input_branch: bool  # some branch tests a function's input
    input_read: bool = False  # the traced code reads an input it is given
    zero_one_dynamic: bool = False  # a dimension marked dynamic has an example size of 0 or 1
    tensor_slots: frozenset[int] = frozenset()  # the argument positions at which some compiled call receives a tensor
    number_slots: frozenset[int] = frozenset()  # ... a bare number

    def without_branch(self) -> "Shape":
        """These facts with no branch to keep: for a failure that no branch causes."""
        return dataclasses.replace(self, input_branch=False)

    def kept_by(self, other: "Shape") -> bool:
        """Whether a candidate of this shape keeps what the original (`self`) had. Code that never
        calls a PT2 entry point is not a PT2 repro, and keeps nothing in particular."""
        if not self.entry_points:
            return True
        return (self.entry_points <= other.entry_points
                and (not self.tensor_input or other.tensor_input)
                and (self.number_input or not other.number_input or not self.tensor_input)
                and not other.number_slots & (self.tensor_slots - self.number_slots)
                and (not self.input_branch or other.input_branch)
                and (not self.input_read or other.input_read)
                and (self.zero_one_dynamic or not other.zero_one_dynamic))


def joined(original: Shape, leap: Shape) -> Shape:
    """What a reduction that went on from a leap keeps: the original's facts and those the leap
    shows that the original's code hid (a hoisted call passes `torch.randn(16)` where the script
    passed a name the rule cannot follow, so a tensor input became a fact to keep). A number the
    leap passes is one the original passed too (the hoist replays its recorded calls): without it,
    a leap passing `sigma=80.0` that the original read from a list met a rule it broke itself, and
    every candidate after it was refused. So is a size of 0 or 1 in a dynamic dimension (an export
    of `image.unsqueeze(0)` with `Dim("batch")`, recorded as `torch.randn(1, 3, 32, 32)`)."""
    return Shape(entry_points=original.entry_points | leap.entry_points,
                 tensor_input=original.tensor_input or leap.tensor_input,
                 number_input=original.number_input or leap.number_input,
                 tensor_slots=original.tensor_slots | leap.tensor_slots,
                 number_slots=original.number_slots | leap.number_slots,
                 input_branch=original.input_branch or leap.input_branch,
                 input_read=original.input_read or leap.input_read,
                 zero_one_dynamic=original.zero_one_dynamic or leap.zero_one_dynamic)


def shape_of(tree: ast.AST) -> Shape:
    tree = qualified(tree)
    bindings = _bindings(tree)
    compiled = _compiled_names(tree)
    functions, _ = _definitions(tree)
    inputs = [(slot, item) for call in ast.walk(tree) if isinstance(call, ast.Call)
              for slot, item in enumerate(item for arg in _compiled_inputs(call, compiled, bindings, functions)
                                          for item in _unpacked(arg, bindings))]
    exported_tensors, exported_others = _exported_examples(tree, bindings, functions)
    tensor_slots = frozenset(slot for slot, arg in inputs if _is_tensor(arg, bindings)) | exported_tensors
    number_slots = frozenset(slot for slot, arg in inputs if _is_number(arg, bindings)) | exported_others
    entries = _entry_functions(tree, bindings)
    return Shape(entry_points=frozenset(_entry_points(tree)),
                 tensor_input=bool(tensor_slots), number_input=bool(number_slots),
                 tensor_slots=tensor_slots, number_slots=number_slots,
                 input_branch=any(map(_branches_on_input, _compiled_functions(tree, bindings))),
                 # code the file does not define (`torch.compile(nn.Linear(2, 1))`) reads its input as far as we know
                 input_read=not entries or any(map(_uses_input, entries)),
                 zero_one_dynamic=any(size in (0, 1) for size in _dynamic_sizes(tree, bindings)))


def qualified(tree: ast.AST) -> ast.AST:
    """A copy of `tree` with the names it imports from torch written out, as the rules read them:
    `from torch.export import export` makes `export(model, (x,))` read as `torch.export.export(...)`.
    fresh_issues_9's export and AOTI reports called `export` so, and no rule saw an entry point or
    an example: their repros exported `((),)` and `(1, 1, 1)` for tensors. The tree itself when it
    imports nothing from torch."""
    imported = torch_imports(tree)
    if not imported:
        return tree

    class Qualify(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id not in imported or not isinstance(node.ctx, ast.Load):
                return node
            return ast.copy_location(ast.parse(imported[node.id], mode="eval").body, node)
    return Qualify().visit(copy.deepcopy(tree))


def torch_imports(tree: ast.AST) -> dict[str, str]:
    """The names a file imports from torch, written out: `from torch.export import export as e`
    -> {"e": "torch.export.export"}."""
    return {alias.asname or alias.name: f"{node.module}.{alias.name}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level and node.module
            and (node.module == "torch" or node.module.startswith("torch."))
            for alias in node.names if alias.name != "*"}


def _torch_attribute(node: ast.AST) -> str | None:
    """`torch.compile` -> "compile", `torch.export.export` -> "export", else None."""
    if isinstance(node, ast.Attribute):
        base = node.value
        if isinstance(base, ast.Name) and base.id == "torch":
            return node.attr
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "torch":
            return node.attr
    return None


def _entry_points(tree: ast.AST) -> set[str]:
    """`torch.compile` and `torch.export.export`, not the module in `torch.export.load(path)`: a
    repro whose export failed kept `torch.export.load()` after it as its last mention of the module."""
    prefixes = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return {name for node in ast.walk(tree)
            if id(node) not in prefixes and (name := _torch_attribute(node)) in ENTRY_POINTS}


def is_export(node: ast.AST, imports: dict[str, str] | None = None) -> bool:
    """`torch.export.export` itself, or a call of it; also under a name the file imports it as
    (`imports`: torch_imports)."""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name) and imports:
        return imports.get(target.id) == "torch.export.export"
    return _torch_attribute(target) == "export"


def is_compile(node: ast.AST, imports: dict[str, str] | None = None) -> bool:
    """`torch.compile` itself, or a call of it; also under a name the file imports it as."""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name) and imports:
        return imports.get(target.id) == "torch.compile"
    return _torch_attribute(target) == "compile"


def _compiled_names(tree: ast.AST) -> set[str]:
    """Names bound to a compiled callable: `f = torch.compile(...)`, `@torch.compile def f`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_compile(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(is_compile, node.decorator_list)):
            names.add(node.name)
    return names


def _compiled_inputs(call: ast.Call, compiled: set[str], bindings: dict[str, ast.expr] | None = None,
                     functions: dict[str, ast.FunctionDef] | None = None) -> list[ast.expr]:
    """The inputs a call hands to compiled code: a compiled callable's arguments, or
    `torch.export.export(module, (inputs...))`'s example inputs, read through a name bound to a
    tuple or a call of the file's function that returns a written-out one (`load_customers(16)`).
    A tuple the rule cannot see into is one example to it."""
    func = call.func
    if (isinstance(func, ast.Call) and is_compile(func)) or (isinstance(func, ast.Name) and func.id in compiled):
        return list(call.args)
    if _torch_attribute(func) == "export" and len(call.args) >= 2:
        examples = _returned(_resolved(call.args[1], bindings or {}), functions or {})
        return list(examples.elts) if isinstance(examples, (ast.Tuple, ast.List)) else [call.args[1]]
    return []


def _returned(node: ast.expr, functions: dict[str, ast.FunctionDef]) -> ast.expr:
    """What a call of the file's own function returns, where it has one `return` of a written-out
    tuple or list, read with the parameters the function never rebinds replaced by what the call
    gives them; else the node itself. fresh_issues_9's AOTI repro exported `load_customers(1)`
    returning `(torch.ones(1), n, ...)`: an int in a tensor's place, seen only through `n`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
        return node
    function = functions[node.func.id]
    returns = [n for n in ast.walk(function) if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom))]
    if not (len(returns) == 1 and isinstance(returns[0], ast.Return) and isinstance(returns[0].value, (ast.Tuple, ast.List))):
        return node
    rebound = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    binding = {name: value for name, value in (bind_arguments(function.args, node) or {}).items() if name not in rebound}
    return substitute(returns[0].value, binding) if binding else returns[0].value


def _exported_examples(tree: ast.AST, bindings: dict[str, ast.expr],
                       functions: dict[str, ast.FunctionDef]) -> tuple[frozenset[int], frozenset[int]]:
    """The slots of `torch.export.export`'s example inputs that may hold a tensor, and those that
    cannot (a constant, an empty container: to the rule, a number in a tensor's place; fresh_issues_9's
    AOTI repro exported `(torch.ones(1), (), ...)` where the report passed three tensors). Export's
    examples are tensors in practice, so one the rule cannot follow (`feats` from a data helper)
    counts as a tensor. Else a candidate exported with `(1,)` kept the failure of a buffer's save
    (fresh_issues_5) and passed as a repro whose input had become an int. A call of the file's own
    function that returns nothing is None, not a tensor: fresh_issues_8's quantized export kept
    its failure exported with `(tokenize(),)` once `tokenize`'s body had become `pass`."""
    kinds = [(slot, _may_be_tensor(item, bindings, functions))
             for call in ast.walk(tree) if isinstance(call, ast.Call) and _torch_attribute(call.func) == "export"
             for slot, item in enumerate(item for arg in _compiled_inputs(call, set(), bindings, functions)
                                         for item in _unpacked(arg, bindings))]
    return frozenset(slot for slot, tensor in kinds if tensor), frozenset(slot for slot, tensor in kinds if not tensor)


def _may_be_tensor(item: ast.expr, bindings: dict[str, ast.expr], functions: dict[str, ast.FunctionDef],
                   depth: int = 0) -> bool:
    """Whether an example input may hold a tensor: not a constant, a number, a helper's None, or a
    container of none of them (the same export then kept its failure exported with `([],)`)."""
    node = _resolved(item, bindings)
    if depth > MAX_FOLLOW or isinstance(node, ast.Constant) or _is_number(node, bindings) or _returns_none(node, functions):
        return False
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(_may_be_tensor(element, bindings, functions, depth + 1) for element in node.elts)
    if isinstance(node, ast.Dict):
        return any(_may_be_tensor(value, bindings, functions, depth + 1) for value in node.values)
    return True


def _returns_none(node: ast.expr, functions: dict[str, ast.FunctionDef]) -> bool:
    """A call of a function of the file that never returns a value (no `return x`, no `yield`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
        return False
    return not any(isinstance(n, (ast.Yield, ast.YieldFrom)) or (isinstance(n, ast.Return) and n.value is not None
                   and not (isinstance(n.value, ast.Constant) and n.value.value is None))
                   for n in ast.walk(functions[node.func.id]))


def _unpacked(arg: ast.expr, bindings: dict[str, ast.expr]) -> list[ast.expr]:
    """A starred argument's items where they are written out (`f(*inputs)` after
    `inputs = (x, y)`); any other argument as it is."""
    if not isinstance(arg, ast.Starred):
        return [arg]
    value = _resolved(arg.value, bindings)
    return list(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else [arg]


def _compiled_functions(tree: ast.AST, bindings: dict[str, ast.expr]) -> list[ast.FunctionDef]:
    """The code PT2 traces: functions decorated with `torch.compile`, the function or module (its
    `forward`) handed to `torch.compile` / `torch.export.export`, and the file's functions and
    methods those call by name, transitively."""
    functions, classes = _definitions(tree)
    roots = _decorated(functions)
    for target in map(strip_methods, _entry_targets(tree, bindings)):
        roots.extend(_traced_by(target, functions, classes))
    seen: dict[int, ast.FunctionDef] = {}
    while roots:
        function = roots.pop()
        if id(function) in seen:
            continue
        seen[id(function)] = function
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                roots.extend(_traced_by(_resolved(node.func, bindings), functions, classes) if name in classes
                             else [functions[name]] if name in functions else [])
    return list(seen.values())


def traced_source(source: str) -> str:
    """The part of a script PT2 traces, as far as the file shows it: the functions compiled or
    exported and those they call by name, each module class handed to it whole (its `__init__`
    builds the submodules its `forward` runs: `self.drop = nn.Dropout(p)`). The whole script when
    an entry point is handed something the file does not define (a library's model) or it does not
    parse: then any of it may run traced. Inputs made outside (`f(torch.randn(8))`) are not in it."""
    try:
        tree = qualified(ast.parse(source))
    except (SyntaxError, ValueError):
        return source
    bindings = _bindings(tree)
    functions, classes = _definitions(tree)
    targets = [strip_methods(target) for target in _entry_targets(tree, bindings)]
    decorators = {id(node) for function in functions.values() for decorator in function.decorator_list
                  for node in ast.walk(decorator)}
    handed_later = any(isinstance(call, ast.Call) and _torch_attribute(call.func) in ENTRY_POINTS and not call.args
                       and id(call) not in decorators for call in ast.walk(tree))  # torch.compile(backend=...)(f)
    if handed_later or (not targets and not _decorated(functions)) \
            or not all(_traced_by(target, functions, classes) for target in targets):
        return source
    owners = {id(member): cls for cls in classes.values() for member in cls.body}
    parts = {id(node): node for node in (owners.get(id(function), function)
                                         for function in _compiled_functions(tree, bindings))}
    return "\n\n".join(ast.get_source_segment(source, node) or "" for node in
                        sorted(parts.values(), key=lambda node: node.lineno))


def _entry_functions(tree: ast.AST, bindings: dict[str, ast.expr]) -> list[ast.FunctionDef]:
    """The functions the entry point is handed, which receive the inputs: a function decorated with
    or passed to `torch.compile`, or the `forward` of the module compiled or exported (`Net().eval()`
    is `Net()`). Not the submodules: a `Backbone` whose `forward` reads its `x` says nothing of
    whether the model reads `images`."""
    functions, classes = _definitions(tree)
    entries = _decorated(functions)
    for target in map(strip_methods, _entry_targets(tree, bindings)):
        if isinstance(target, ast.Name) and target.id in functions:
                entries.append(functions[target.id])
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id in classes:
            entries += [n for n in classes[target.func.id].body
                        if isinstance(n, ast.FunctionDef) and n.name in ("forward", "__call__")]
        elif _is_self_attribute(target):  # `torch.compile(self._predict_impl)` in `__init__`
            entries += _method_named(target.attr, classes)
    return entries


def _is_self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _method_named(name: str, classes: dict[str, ast.ClassDef]) -> list[ast.FunctionDef]:
    """The method `name` when exactly one of the file's classes defines it (else none: unknown)."""
    methods = [n for cls in classes.values() for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return methods if len(methods) == 1 else []


def _definitions(tree: ast.AST) -> tuple[dict[str, ast.FunctionDef], dict[str, ast.ClassDef]]:
    """The file's functions and classes by name."""
    return ({n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)},
            {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)})


def _decorated(functions: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """Functions decorated with `torch.compile`."""
    return [n for n in functions.values() if any(map(is_compile, n.decorator_list))]


def _entry_targets(tree: ast.AST, bindings: dict[str, ast.expr]) -> list[ast.expr]:
    """What each `torch.compile(...)` / `torch.export.export(...)` call is handed, names followed."""
    return [_resolved(call.args[0], bindings) for call in ast.walk(tree)
            if isinstance(call, ast.Call) and _torch_attribute(call.func) in ENTRY_POINTS and call.args]


def _traced_by(target: ast.expr, functions: dict, classes: dict, seen: frozenset[str] = frozenset()) -> list[ast.FunctionDef]:
    """What calling `target` runs: a function of the file, a method handed on as `self.method` (the
    one method of that name in the file's classes), or a module's `forward` together with the
    `forward`s of the submodules its class builds (`self.blocks = ModuleList([Block() ...])`)."""
    if isinstance(target, ast.Name) and target.id in functions:
        return [functions[target.id]]
    if _is_self_attribute(target):
        return _method_named(target.attr, classes)
    name = target.id if isinstance(target, ast.Name) else (
        target.func.id if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) else None)
    if name not in classes or name in seen:
        return []
    cls = classes[name]
    traced = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("forward", "__call__")]
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes:
            traced += _traced_by(node.func, functions, classes, seen | {name})
    return traced


def _bindings(tree: ast.AST) -> dict[str, ast.expr]:
    """Each simple name's last assigned value anywhere in the file (good enough for repro scripts).
    A value computed from the name itself (`x = x.float()`) keeps the one before it, which says
    what the name is."""
    values = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name not in values or not _reads_name(node.value, name):
                values[name] = node.value
    return values


def _reads_name(node: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _resolved(node: ast.expr, bindings: dict[str, ast.expr], depth: int = 0) -> ast.expr:
    while isinstance(node, ast.Name) and node.id in bindings and depth < MAX_FOLLOW:
        node, depth = bindings[node.id], depth + 1
    return node


def _is_tensor(node: ast.expr, bindings: dict[str, ast.expr], depth: int = 0) -> bool:
    """Whether the expression makes a tensor, following names to their last value: `x = x.float()`
    binds a name to a method call on itself, so the walk is bounded (`MAX_FOLLOW`)."""
    node = _resolved(node, bindings)
    if depth > MAX_FOLLOW:
        return False
    if isinstance(node, ast.Call):
        name = _torch_attribute(node.func)
        if name is not None:
            return name in TENSOR_FACTORIES
        if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
            return _is_tensor(node.func.value, bindings, depth + 1)
    if isinstance(node, ast.Attribute) and node.attr == "T":
        return _is_tensor(node.value, bindings, depth + 1)
    return False


def _is_number(node: ast.expr, bindings: dict[str, ast.expr]) -> bool:
    node = _resolved(node, bindings)
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool)


def _branches_on_input(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether an `if`/`while`/conditional expression in the function tests its inputs: a parameter
    other than `self`, or a name bound from one (followed through the function's assignments, loop
    and comprehension targets, `with ... as` and `:=`: `for e, n in enumerate(counts)` makes `n`
    as data-dependent as `counts`)."""
    derived = _parameters(function)
    bindings = [binding for node in ast.walk(function) for binding in _bound_from(node)]
    grew = True
    while grew:
        grew = False
        for targets, value in bindings:
            if _reads(value, derived):
                new = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)} - derived
                derived |= new
                grew |= bool(new)
    return any(_reads(n.test, derived) for n in ast.walk(function) if isinstance(n, (ast.If, ast.While, ast.IfExp)))


def _bound_from(node: ast.AST) -> list[tuple[list[ast.expr], ast.expr]]:
    """(targets, the value they are bound from) for each binding `node` makes."""
    if isinstance(node, ast.Assign):
        return [(node.targets, node.value)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
        return [([node.target], node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [([node.target], node.iter)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [([item.optional_vars], item.context_expr) for item in node.items if item.optional_vars is not None]
    if isinstance(node, ast.NamedExpr):
        return [([node.target], node.value)]
    return []


def strip_methods(node: ast.expr) -> ast.expr:
    """`Net().eval().to(d)` -> `Net()`: a chain of method calls on an instance returns it."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SELF_RETURNING_METHODS:
        node = node.func.value
    return node


def _uses_input(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function computes with one of its inputs: an input (or a plain copy of one, `y = x`)
    read anywhere but in a statement that calls nothing (`images` or `tokens.reshape` alone on a line)
    or as the value of a plain copy (`unique_name_0 = images`, `x = x`): those name it and do nothing
    with it."""
    inputs = _parameters(function)
    copies = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)]
    grew = True
    while grew:
        grew = False
        for assignment in copies:
            if assignment.value.id in inputs:
                new = {t.id for t in assignment.targets if isinstance(t, ast.Name)} - inputs
                inputs |= new
                grew |= bool(new)
    # a statement that only names or looks up something (`images`, `tokens.reshape`) does nothing,
    # nor does one that only unpacks it into names nothing else reads (`b, t, d = x.shape`, then `d`)
    idle: set[int] = set()
    while True:
        loaded = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                  and id(n) not in idle}
        now = {id(node) for statement in ast.walk(function) if _does_nothing(statement, loaded)
               for node in ast.walk(statement)}
        if now == idle:
            break
        idle = now
    idle |= {id(copy.value) for copy in copies}
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in inputs
               and id(node) not in idle for node in ast.walk(function))


def _does_nothing(statement: ast.AST, loaded: set[str]) -> bool:
    """A statement that calls nothing and either is a bare expression or assigns only to plain
    names that nothing in the function reads."""
    if any(isinstance(n, ast.Call) for n in ast.walk(statement)):
        return False
    if isinstance(statement, ast.Expr):
        return True
    if not isinstance(statement, ast.Assign):
        return False
    stored = [n for t in statement.targets for n in ast.walk(t) if not isinstance(n, (ast.Tuple, ast.List, ast.Starred))]
    return all(isinstance(n, ast.Name) and n.id not in loaded for n in stored if not isinstance(n, ast.expr_context))


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The inputs a function is given: its parameters but `self` / `cls`."""
    names = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs} - {"self", "cls"}
    if function.args.vararg:
        names.add(function.args.vararg.arg)
    return names


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


MARK_DYNAMIC = frozenset({"mark_dynamic", "maybe_mark_dynamic"})
SIZED_FACTORIES = frozenset({"randn", "rand", "ones", "zeros", "empty", "full", "randint"})


def _dynamic_sizes(tree: ast.AST, bindings: dict[str, ast.expr]) -> list[int]:
    """The example sizes, where the script writes them as literals, of the dimensions it marks
    dynamic: `mark_dynamic(x, d)` on `x = torch.randn(...)`, and the `dynamic_shapes` entries of a
    `torch.export.export(model, inputs, dynamic_shapes=...)` (a dict in the inputs' order, or a
    tuple; each entry a `{dim: Dim}` dict or a tuple with `None` for static dims)."""
    marked: list[tuple[ast.expr, int]] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name in MARK_DYNAMIC and len(call.args) >= 2:
            dims = _resolved(call.args[1], bindings)
            for dim in (dims.elts if isinstance(dims, (ast.Tuple, ast.List)) else [dims]):
                if (index := _int(dim)) is not None:
                    marked.append((call.args[0], index))
        elif is_export(call) and len(call.args) >= 2 and isinstance(call.args[1], (ast.Tuple, ast.List)):
            spec = next((_resolved(k.value, bindings) for k in call.keywords if k.arg == "dynamic_shapes"), None)
            entries = list(spec.values) if isinstance(spec, ast.Dict) else (
                list(spec.elts) if isinstance(spec, (ast.Tuple, ast.List)) else [])
            for example, entry in zip(call.args[1].elts, entries):
                marked += [(example, dim) for dim in _dynamic_dims(_resolved(entry, bindings))]
    sizes = []
    for example, dim in marked:
        written = _literal_sizes(_resolved(example, bindings))
        if written is not None and -len(written) <= dim < len(written):
            sizes.append(written[dim])
    return sizes


def _dynamic_dims(entry: ast.expr) -> list[int]:
    """`{0: batch}` -> [0]; `(None, Dim("t"))` -> [1]."""
    if isinstance(entry, ast.Dict):
        return [index for key in entry.keys if (index := _int(key)) is not None]
    if isinstance(entry, (ast.Tuple, ast.List)):
        return [i for i, d in enumerate(entry.elts) if not (isinstance(d, ast.Constant) and d.value is None)]
    return []


def _literal_sizes(node: ast.expr) -> list[int] | None:
    """`torch.randn(4, 8)`, `torch.zeros((4, 8))` or `torch.randint(0, 9, (4, 8))` -> [4, 8]; None where
    the sizes are not all written as numbers."""
    factory = _torch_attribute(node.func) if isinstance(node, ast.Call) else None
    if factory not in SIZED_FACTORIES:
        return None
    shape = next((a for a in node.args if isinstance(a, (ast.Tuple, ast.List))), None)
    if shape is None and factory in ("randint", "full"):  # their other arguments are not sizes
        return None
    written = shape.elts if shape is not None else node.args
    sizes = [size for a in written if (size := _int(a)) is not None]
    return sizes if written and len(sizes) == len(written) else None


def _int(node: ast.expr | None) -> int | None:
    """A literal int (`3`, `-1`), else None."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    value = node.operand if negative else node
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return -value.value if negative else value.value
    return None
