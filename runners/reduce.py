"""A test-case reducer for Python source: smallest program for which a predicate still holds.

Generic mechanism: it knows Python syntax, nothing about PT2. The caller supplies
`is_interesting(source) -> bool` (for us: "runs in the sandbox and fails with the same
signature"). Every candidate is produced by editing the syntax tree and unparsing it, so every
candidate parses. Passes run coarse to fine and repeat until none makes progress:

  statements   delete runs of statements in every block (hierarchical delta debugging)
  unwrap       replace if/for/while/with/try by their bodies
  instances    instantiate another class of the module, or a layer the class builds in __init__,
               instead (drops wrapper layers; the class goes when nothing else uses it)
  parameters   drop a function's (or class __init__'s) parameter together with its call-site arguments
  inline       inline a variable that is assigned once and read once, and a function called once
  arguments    drop call arguments, keyword arguments, list/tuple elements, def parameters
  expressions  replace an expression by one of its subexpressions, or a call by one of the
               caller's `replacements` (simple expressions from the caller's domain)
  constants    shrink numbers (sizes, shapes, ranges, loop counts) toward 1 and 0

A candidate that reads a name nothing binds in its scope (a sure NameError, e.g. a deleted
definition still called), a `self` attribute its class never sets (AttributeError) or calls one
of the module's functions with arguments it cannot take (TypeError) is never run, unless the
original already did so. After an accepted edit a pass goes on where it was; the next round
starts it from the beginning again.

Candidates are cached by their text; a batch of candidates is tested in parallel threads when
`parallelism > 1` (the predicate should then be thread-safe, e.g. one subprocess per call).
"""
from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import io
import re
import time
import tokenize
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

Predicate = Callable[[str], bool]
PathStep = tuple[str, int | None]
NodePath = tuple[PathStep, ...]
Edit = Callable[[ast.AST], bool]  # mutates a fresh copy of the tree; False = not applicable


@dataclass
class ReduceStats:
    lines_before: int = 0
    lines_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    candidates: int = 0  # candidates generated (including cache hits)
    runs: int = 0  # predicate calls
    cache_hits: int = 0
    sure_failures_skipped: int = 0  # candidates not run: a sure NameError/AttributeError/TypeError (sure_errors)
    accepted: int = 0
    rounds: int = 0
    wall_s: float = 0.0
    stop_reason: str = ""
    passes: dict[str, int] = field(default_factory=dict)  # accepted edits per pass

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ReduceResult:
    source: str
    stats: ReduceStats


def count_tokens(source: str) -> int:
    """Significant tokens (no comments, newlines or indentation)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        return sum(1 for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return len(source.split())


def size_key(source: str) -> tuple[int, int]:
    """What "smaller" means: fewer characters, then smaller numbers (so 3 -> 1 counts as progress)."""
    return len(source), sum(int(digits) for digits in re.findall(r"\d+", source))


def format_source(tree: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# --- well-formed candidates: no new unbound names ---------------------------------------------------

ALWAYS_BOUND = frozenset(dir(builtins)) | {"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__",
                                           "__builtins__", "__path__", "__annotations__", "__module__",
                                           "__qualname__", "__class__"}
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class _Scope:
    parent: "_Scope | None"
    is_class: bool = False
    bound: set[str] = field(default_factory=set)
    loads: set[str] = field(default_factory=set)

    def visible(self) -> set[str]:
        """Own names, enclosing functions' and the module's (a class body is not an enclosing scope)."""
        names, scope = set(self.bound), self.parent
        while scope is not None:
            if not scope.is_class:
                names |= scope.bound
            scope = scope.parent
        return names


def unbound_names(tree: ast.AST) -> frozenset[str] | None:
    """Names some scope reads but nothing binds there, in an enclosing function or the module:
    where that code runs, a NameError. Flow-insensitive and permissive (a name bound anywhere in
    a scope counts as bound; annotations are not read); None when a star import hides the bindings."""
    module = _Scope(None)
    scopes = [module]

    def enter(owner: ast.AST, parent: _Scope) -> None:
        scope = _Scope(parent, is_class=isinstance(owner, ast.ClassDef))
        scopes.append(scope)
        if isinstance(owner, FUNCTION_TYPES):
            args = owner.args
            scope.bound.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a)
        for statement in owner.body if isinstance(owner.body, list) else [owner.body]:
            visit(statement, scope)

    def visit(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                scope.bound.add(node.name)
            outer = getattr(node, "decorator_list", []) + getattr(node, "bases", []) + [k.value for k in getattr(node, "keywords", [])]
            if isinstance(node, FUNCTION_TYPES):
                outer += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            for part in outer:  # evaluated where the definition stands
                visit(part, scope)
            enter(node, scope)
            return
        if isinstance(node, ast.Name):
            (scope.loads if isinstance(node.ctx, ast.Load) else scope.bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    raise _StarImport
                scope.bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            scope.bound.update(node.names)
        elif isinstance(getattr(node, "name", None), str) and not isinstance(node, ast.alias):  # except as, match
            scope.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            scope.bound.add(node.rest)
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, scope)

    try:
        visit(tree, module)
    except _StarImport:
        return None
    return frozenset(name for scope in scopes for name in scope.loads - scope.visible() - ALWAYS_BOUND)


class _StarImport(Exception):
    pass


DYNAMIC_ATTRIBUTES = frozenset({"setattr", "__getattr__", "__getattribute__", "__dict__", "__setattr__"})


def dangling_attributes(tree: ast.AST) -> frozenset[str]:
    """`Class.attr` for each `self.attr` a class's methods read but nothing in the class stores or
    defines (a deleted `self.norm = ...` still used, a deleted method still called): an
    AttributeError where it runs, unless a base class provides it, which the subset check allows
    for (the original reads those too). Classes that set attributes dynamically are left out."""
    dangling = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        if any(isinstance(n, ast.Name) and n.id in DYNAMIC_ATTRIBUTES or isinstance(n, ast.FunctionDef)
               and n.name in DYNAMIC_ATTRIBUTES or isinstance(n, ast.Attribute) and n.attr in DYNAMIC_ATTRIBUTES
               for n in ast.walk(cls)):
            continue
        defined = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        defined |= {t.id for n in cls.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        reads = set()
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            params = method.args.posonlyargs + method.args.args
            if not params:
                continue
            self_name = params[0].arg
            for node in ast.walk(method):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
                    (reads if isinstance(node.ctx, ast.Load) else defined).add(node.attr)
        dangling |= {f"{cls.name}.{attr}" for attr in reads - defined}
    return frozenset(dangling)


def bad_calls(tree: ast.AST) -> frozenset[str]:
    """Names of the module's own functions and classes called with arguments their signature
    rejects (too many or too few positional arguments, an unknown or missing keyword): a sure
    TypeError where the call runs. Decorated or rebound definitions are left out."""
    signatures: dict[str, ast.arguments] = {}
    bindings: dict[str, int] = {}
    for node in getattr(tree, "body", []):
        for name in _module_bindings(node):
            bindings[name] = bindings.get(name, 0) + 1
        if getattr(node, "decorator_list", None):
            continue
        if isinstance(node, ast.FunctionDef):
            signatures[node.name] = node.args
        elif isinstance(node, ast.ClassDef):
            methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
            init = methods.get("__init__")
            if init is not None and "__new__" not in methods and not init.decorator_list and init.args.args:
                args = copy.copy(init.args)
                args.posonlyargs, args.args = (args.posonlyargs[1:], args.args) if args.posonlyargs else ([], args.args[1:])
                signatures[node.name] = args
    bad = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in signatures
                and bindings.get(node.func.id) == 1 and not _accepts(signatures[node.func.id], node)):
            bad.add(node.func.id)
    return frozenset(bad)


def _module_bindings(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)] + \
        [(a.asname or a.name).split(".")[0] for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))
         for a in n.names]


def _accepts(args: ast.arguments, call: ast.Call) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True  # *args / **kwargs at the call: cannot tell
    positional = args.posonlyargs + args.args
    if len(call.args) > len(positional) and args.vararg is None:
        return False
    filled = {p.arg for p in positional[:len(call.args)]}
    by_keyword = {p.arg for p in args.args} | {p.arg for p in args.kwonlyargs}
    for keyword in call.keywords:
        if keyword.arg in filled or (keyword.arg not in by_keyword and args.kwarg is None):
            return False
        filled.add(keyword.arg)
    required = [p.arg for p in positional[:len(positional) - len(args.defaults)]]
    required += [p.arg for p, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    return all(name in filled for name in required)


def sure_errors(tree: ast.AST) -> frozenset[str] | None:
    """What would certainly fail where it runs: unbound names, dangling `self` attributes, calls
    that do not fit their definition. None when a star import makes names unknowable."""
    unbound = unbound_names(tree)
    if unbound is None:
        return None
    return frozenset({f"name {n}" for n in unbound} | {f"attribute {a}" for a in dangling_attributes(tree)}
                     | {f"call {c}" for c in bad_calls(tree)})


# --- addressing nodes in a tree -------------------------------------------------------------------

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


# --- the passes: each yields edits, coarse first ---------------------------------------------------

def statement_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Delete chunks of every block, halving the chunk size (ddmin's complement steps)."""
    for owner_path, name in statement_lists(tree):
        length = len(getattr(resolve(tree, owner_path), name))
        chunk = length
        while chunk >= 1:
            for start in range(0, length, chunk):
                yield "statements", _delete_slice(owner_path, name, start, start + chunk)
            chunk //= 2


def _delete_slice(owner_path: NodePath, name: str, start: int, stop: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        owner = resolve(tree, owner_path)
        items = getattr(owner, name)
        if start >= len(items):
            return False
        del items[start:stop]
        if not items and name in ("body",) or (not items and name == "handlers"):
            if name == "handlers":
                return False  # a try needs a handler or a finally; unwrap handles try
            items.append(ast.Pass())
        return True
    return edit


UNWRAPPABLE = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith,
               ast.FunctionDef, ast.ClassDef)  # a def's body hoisted in place: inlining a one-use layer


def unwrap_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Replace a compound statement by one of its bodies."""
    for owner_path, name in statement_lists(tree):
        owner = resolve(tree, owner_path)
        for index, statement in enumerate(getattr(owner, name)):
            for body_name in ("body", "orelse", "finalbody"):
                body = getattr(statement, body_name, None)
                if isinstance(statement, UNWRAPPABLE) \
                        and isinstance(body, list) and body:
                    yield "unwrap", _splice(owner_path, name, index, body_name)
            if isinstance(statement, ast.Try):
                for handler_index in range(len(statement.handlers)):
                    yield "unwrap", _splice(owner_path, name, index, "handlers", handler_index)


def _splice(owner_path: NodePath, name: str, index: int, body_name: str, handler: int | None = None) -> Edit:
    def edit(tree: ast.AST) -> bool:
        items = getattr(resolve(tree, owner_path), name)
        if index >= len(items):
            return False
        statement = items[index]
        body = statement.handlers[handler].body if handler is not None else getattr(statement, body_name, None)
        if not body:
            return False
        items[index:index + 1] = body
        return True
    return edit


ARGUMENT_FIELDS = (("Call", "args"), ("Call", "keywords"), ("List", "elts"), ("Tuple", "elts"), ("Set", "elts"),
                   ("Dict", "keys"), ("arguments", "args"), ("arguments", "kwonlyargs"), ("ClassDef", "bases"),
                   ("FunctionDef", "decorator_list"), ("ClassDef", "decorator_list"), ("Import", "names"),
                   ("ImportFrom", "names"))


def argument_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Drop one element of argument-like lists (call args, kwargs, list items, params, imports)."""
    for path, node in walk_paths(tree):
        for type_name, name in ARGUMENT_FIELDS:
            if type(node).__name__ == type_name:
                for index in range(len(getattr(node, name))):
                    yield "arguments", _drop_item(path, name, index)


def _drop_item(path: NodePath, name: str, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        node = resolve(tree, path)
        items = getattr(node, name)
        if index >= len(items) or (isinstance(node, (ast.Import, ast.ImportFrom)) and len(items) == 1):
            return False
        del items[index]
        if isinstance(node, ast.Dict):
            del node.values[index]
        if isinstance(node, ast.arguments) and name == "args" and node.defaults:
            excess = len(node.defaults) - len(node.args)
            if excess > 0:
                del node.defaults[:excess]
        if isinstance(node, ast.arguments) and name == "kwonlyargs":
            del node.kw_defaults[index]
        return True
    return edit


def expression_edits(tree: ast.AST, replacements: Sequence[ast.expr] = ()) -> Iterator[tuple[str, Edit]]:
    """Replace an expression by one of its direct subexpressions, or a call by a caller-given
    simple expression (the caller knows its domain: e.g. a small tensor for any tensor-making call).
    A bare imported module is never offered as the simpler value (`torch.randn(2)` -> `torch` may
    still fail the same way, but nobody can read that repro), nor is a call's callee
    (`f(torch.randn(2))` -> `f(torch.randn)` passes a function where a value was)."""
    modules = imported_names(tree)
    for path, node in walk_paths(tree):
        if not path or not isinstance(node, ast.expr) or isinstance(node, (ast.Name, ast.Constant)):
            continue
        if path[-1][0] in ("targets", "target", "ctx", "func") or isinstance(node, (ast.Starred, ast.Slice)):
            continue
        for child_name, child_index in _child_expressions(node):
            child = getattr(node, child_name) if child_index is None else getattr(node, child_name)[child_index]
            if isinstance(node, ast.Call) and child_name == "func":
                continue
            if isinstance(child, ast.Name) and child.id in modules:
                continue
            yield "expressions", _replace_with_child(path, child_name, child_index)
        if isinstance(node, ast.Call):
            for replacement in replacements:
                yield "expressions", _replace_with(path, replacement)


def imported_names(tree: ast.AST) -> set[str]:
    """Names a module binds with `import` (modules, mostly)."""
    names = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _replace_with(path: NodePath, replacement: ast.expr) -> Edit:
    def edit(tree: ast.AST) -> bool:
        parent = resolve(tree, path[:-1])
        if ast.unparse(resolve(tree, path)) == ast.unparse(replacement):
            return False
        _set(parent, path[-1], copy.deepcopy(replacement))
        return True
    return edit


def instance_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Instantiate something else instead, so a wrapper layer disappears once an inner layer alone
    shows the behaviour: another class of the module (`Outer(...)` -> `Inner(1, 1)`), or a
    layer the class builds in `__init__` (`Net(8)` -> `nn.Linear(8, 4)` for `self.fc = nn.Linear(dim, 4)`,
    the call's arguments and the defaults put in for the parameters)."""
    classes = {node.name: node for node in getattr(tree, "body", []) if isinstance(node, ast.ClassDef)}
    for path, node in walk_paths(tree):
        if path and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes:
            for name, other in classes.items():
                if name != node.func.id:
                    yield "instances", _replace_instance(path, _instantiation(name, other), node.func.id)
            for layer in _layers_built(classes[node.func.id], node):
                yield "instances", _replace_instance(path, layer, node.func.id)


def _replace_instance(path: NodePath, replacement: ast.expr, class_name: str) -> Edit:
    """Replace an instantiation, and drop the class when nothing else uses it: the candidate is
    then smaller at once (the replacement alone is often longer than `Net()`)."""
    replace = _replace_with(path, replacement)

    def edit(tree: ast.AST) -> bool:
        if not replace(tree):
            return False
        if not any(isinstance(n, ast.Name) and n.id == class_name for n in ast.walk(tree)):
            tree.body = [n for n in tree.body if not (isinstance(n, ast.ClassDef) and n.name == class_name)]
        return True
    return edit


def _layers_built(cls: ast.ClassDef, call: ast.Call) -> list[ast.expr]:
    """The calls in `self.x = call(...)` in `__init__` that do not use `self`, with the `__init__`
    parameters replaced by what `call` passes (or their defaults)."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return []
    binding = _bind_arguments(init.args, call, skip_self=True)
    if binding is None:
        return []
    layers = []
    for statement in init.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.value, ast.Call)
                and isinstance(statement.targets[0], ast.Attribute) and isinstance(statement.targets[0].value, ast.Name)
                and not any(isinstance(n, ast.Name) and n.id == init.args.args[0].arg for n in ast.walk(statement.value))):
            layers.append(_substitute(statement.value, binding))
    return layers


def _bind_arguments(args: ast.arguments, call: ast.Call, skip_self: bool = False) -> dict[str, ast.expr] | None:
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


def _substitute(expression: ast.expr, binding: dict[str, ast.expr]) -> ast.expr:
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return copy.deepcopy(binding[node.id]) if isinstance(node.ctx, ast.Load) and node.id in binding else node
    return Substitute().visit(copy.deepcopy(expression))


def parameter_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Drop a positional parameter of a module-level function (or class `__init__`) together with
    the matching argument at every call site, so the program stays consistent."""
    for owner in getattr(tree, "body", []):
        function = owner if isinstance(owner, ast.FunctionDef) else next(
            (n for n in getattr(owner, "body", []) if isinstance(owner, ast.ClassDef)
             and isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if function is None:
            continue
        first = 1 if function is not owner else 0  # skip `self`
        for index in range(first, len(function.args.posonlyargs + function.args.args)):
            yield "parameters", _drop_parameter(owner.name, function is not owner, index, index - first)


def _drop_parameter(name: str, is_class: bool, param_index: int, arg_index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        owner = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name), None)
        if owner is None:
            return False
        function = owner if not is_class else next(
            (n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        args = function.args
        positional = args.posonlyargs + args.args
        if function is None or param_index >= len(positional):
            return False
        defaults_start = len(positional) - len(args.defaults)
        if param_index >= defaults_start:
            del args.defaults[param_index - defaults_start]
        target = args.posonlyargs if param_index < len(args.posonlyargs) else args.args
        del target[param_index if target is args.posonlyargs else param_index - len(args.posonlyargs)]
        for node in ast.walk(tree):
            if _calls(node, name) and arg_index < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args):
                del node.args[arg_index]
        return True
    return edit


def _calls(node: ast.AST, name: str) -> bool:
    """`name(...)`, or `wrapper(name, ...)(...)` (a function passed through a decorator-like call)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == name
    return (isinstance(func, ast.Call) and bool(func.args) and isinstance(func.args[0], ast.Name)
            and func.args[0].id == name)


def inline_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Inline a variable assigned once and read once (`y = f(x); g(y)` -> `g(f(x))`), and a
    module-level function called once (its body moved to the call, see `_inline_call`)."""
    stores: dict[str, int] = {}
    loads: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            counts = stores if isinstance(node.ctx, ast.Store) else loads
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal)):
            for name in getattr(node, "names", [getattr(node, "name", None)]):
                stores[name] = stores.get(name, 0) + 2  # never inline names with other bindings
    for name, count in stores.items():
        if count == 1 and loads.get(name) == 1:
            yield "inline", _inline_variable(name)
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef) and loads.get(node.name) == 1 and stores.get(node.name) == 2:
            yield "inline", _inline_call(node.name)


def _inline_call(name: str) -> Edit:
    """`def f(a): s1; return e` called once as `... f(x) ...` in some statement S: before S put
    `a = x; s1`, replace the call by `e` (a bare `f(x)` statement just becomes the body) and
    delete the def. Only for plain functions: no decorators, *args or yield, `return` only last."""
    def edit(tree: ast.AST) -> bool:
        function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if function is None or function.decorator_list or not _straight_line(function):
            return False
        site = next(((path, node) for path, node in walk_paths(tree)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name), None)
        if site is None:
            return False
        call_path, call = site
        statement_at = _enclosing_statement(tree, call_path)
        binding = _bind_arguments(function.args, call)
        if statement_at is None or binding is None or function in [resolve(tree, call_path[:i]) for i in range(len(call_path))]:
            return False
        block, index = statement_at
        body = list(function.body)
        value = body.pop().value if body and isinstance(body[-1], ast.Return) else None
        prologue = [ast.Assign(targets=[ast.Name(id=param, ctx=ast.Store())], value=argument)
                    for param, argument in binding.items()
                    if not (isinstance(argument, ast.Name) and argument.id == param)]
        statement = block[index]
        if isinstance(statement, ast.Expr) and statement.value is call:
            replacement = [ast.Expr(value=value)] if value is not None else []
        else:
            _set(resolve(tree, call_path[:-1]), call_path[-1], value if value is not None else ast.Constant(None))
            replacement = [statement]
        block[index:index + 1] = prologue + body + replacement or [ast.Pass()]
        tree.body.remove(function)
        return True
    return edit


def _straight_line(function: ast.FunctionDef) -> bool:
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return False
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    bad = (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal, ast.FunctionDef, ast.AsyncFunctionDef,
           ast.ClassDef, ast.Lambda)
    nested = any(isinstance(n, bad) for statement in function.body for n in ast.walk(statement))
    return not nested and all(r is function.body[-1] for r in returns)


def _enclosing_statement(tree: ast.AST, path: NodePath) -> tuple[list, int] | None:
    """The innermost statement around `path` that sits in a block, as (block, index); None when
    the call is inside a lambda or comprehension (its own scope, evaluated later or repeatedly)."""
    for depth in range(len(path), 0, -1):
        node = resolve(tree, path[:depth])
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return None
        field_name, index = path[depth - 1]
        if isinstance(node, ast.stmt) and index is not None and field_name in ("body", "orelse", "finalbody"):
            return getattr(resolve(tree, path[:depth - 1]), field_name), index
    return None


def _inline_variable(name: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        for owner_path, field_name in statement_lists(tree):
            block = getattr(resolve(tree, owner_path), field_name)
            for index, statement in enumerate(block):
                if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                        and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name):
                    value = statement.value
                    del block[index]
                    if not block:
                        block.append(ast.Pass())
                    for path, node in walk_paths(tree):
                        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                            _set(resolve(tree, path[:-1]), path[-1], value)
                            return True
                    return False
        return False
    return edit


def _instantiation(name: str, cls: ast.ClassDef) -> ast.expr:
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    required = 0
    if init is not None:
        positional = init.args.posonlyargs + init.args.args
        required = max(0, len(positional) - 1 - len(init.args.defaults))
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[ast.Constant(1) for _ in range(required)], keywords=[])


def _child_expressions(node: ast.expr) -> list[PathStep]:
    found = []
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.expr) and not isinstance(value, (ast.Starred, ast.Slice)):
            found.append((name, None))
        elif isinstance(value, list):
            found.extend((name, i) for i, v in enumerate(value) if isinstance(v, ast.expr) and not isinstance(v, ast.Starred))
    return found


def _replace_with_child(path: NodePath, child_name: str, child_index: int | None) -> Edit:
    def edit(tree: ast.AST) -> bool:
        parent = resolve(tree, path[:-1])
        node = resolve(tree, path)
        child = getattr(node, child_name) if child_index is None else getattr(node, child_name)[child_index]
        _set(parent, path[-1], child)
        return True
    return edit


def _set(parent: ast.AST, step: PathStep, value: ast.AST) -> None:
    name, index = step
    if index is None:
        setattr(parent, name, value)
    else:
        getattr(parent, name)[index] = value


def constant_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Shrink numbers: n -> 1, 2, n // 2 (and floats to 1.0 / 0.0); sizes and counts get small."""
    for path, node in walk_paths(tree):
        if path and isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.value, bool):
            for smaller in _smaller_numbers(node.value):
                yield "constants", _replace_constant(path, smaller)


def _smaller_numbers(value: int | float) -> list[int | float]:
    if isinstance(value, float):
        return [v for v in (0.0, 1.0, round(value / 2, 3)) if abs(v) < abs(value)]
    options = [1, 2, value // 2] if value > 2 else ([1] if value == 2 else [])
    if value < 0:
        options = [-1, value // 2]
    return list(dict.fromkeys(v for v in options if abs(v) < abs(value)))


def _replace_constant(path: NodePath, value: int | float) -> Edit:
    def edit(tree: ast.AST) -> bool:
        node = resolve(tree, path)
        if not isinstance(node, ast.Constant) or abs(node.value) <= abs(value):
            return False
        node.value = value
        return True
    return edit


PASSES: tuple[Callable[..., Iterator[tuple[str, Edit]]], ...] = (
    statement_edits, unwrap_edits, instance_edits, parameter_edits, inline_edits, argument_edits, expression_edits,
    constant_edits)


# --- the driver -----------------------------------------------------------------------------------

class Reducer:
    def __init__(self, is_interesting: Predicate, *, budget_s: float = 300, max_runs: int = 10_000,
                 parallelism: int = 1, batch: int | None = None, replacements: Sequence[str] = ()):
        self.is_interesting = is_interesting
        self.replacements = [ast.parse(text, mode="eval").body for text in replacements]
        self.budget_s = budget_s
        self.max_runs = max_runs
        self.parallelism = max(1, parallelism)
        self.batch = batch or self.parallelism
        self.cache: dict[str, bool] = {}
        self.allowed_errors: frozenset[str] | None = None  # the original's own sure errors (see sure_errors)
        self.stats = ReduceStats()
        self.deadline = 0.0
        self.history: list[str] = []  # accepted candidates, oldest first

    def reduce(self, source: str) -> ReduceResult:
        started = time.monotonic()
        self.deadline = started + self.budget_s
        self.stats = ReduceStats(lines_before=len(source.splitlines()), tokens_before=count_tokens(source))
        self.history = []
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            return self._finish(source, started, f"the input does not parse: {exc.msg} (line {exc.lineno})")
        if not self._test(source):
            return self._finish(source, started, "the original is not interesting: nothing to preserve")
        self.allowed_errors = sure_errors(tree)
        best = source
        with ThreadPoolExecutor(self.parallelism) if self.parallelism > 1 else _Inline() as pool:
            self.pool = pool
            reason = "fixpoint: no pass makes progress"
            while True:
                self.stats.rounds += 1
                progressed = False
                for make_edits in PASSES:
                    tree, best, changed = self._run_pass(make_edits, tree, best)
                    progressed |= changed
                    if self._out_of_budget():
                        break
                if self._out_of_budget():
                    reason = self._budget_reason()
                    break
                if not progressed:
                    break
        return self._finish(self._confirm(best, source), started, reason)

    def _run_pass(self, make_edits, tree: ast.AST, best: str) -> tuple[ast.AST, str, bool]:
        """Apply edits of one pass greedily. After an accepted edit the edits are regenerated from
        the new tree and the pass goes on from the same position rather than from the start: the
        edits before it failed a moment ago and mostly still would, and re-running them after
        every success costs quadratic runs. The caller's next round retries them all (fixpoint)."""
        changed, restart, resume_at = False, True, 0
        while restart and not self._out_of_budget():
            restart = False
            pending: list[tuple[str, str, ast.AST, int]] = []
            edits = make_edits(tree, self.replacements) if make_edits is expression_edits else make_edits(tree)
            for position, (pass_name, edit) in enumerate(edits):
                if position < resume_at:
                    continue
                candidate_tree = copy.deepcopy(tree)
                try:
                    if not edit(candidate_tree):
                        continue
                    candidate = format_source(candidate_tree)
                except (IndexError, AttributeError, TypeError, ValueError, RecursionError):
                    continue
                if size_key(candidate) >= size_key(best):
                    continue
                if self._sure_to_fail(candidate_tree):
                    self.stats.sure_failures_skipped += 1
                    continue
                self.stats.candidates += 1
                pending.append((pass_name, candidate, candidate_tree, position))
                if len(pending) >= self.batch:
                    winner = self._first_interesting(pending)
                    pending = []
                    if winner:
                        tree, best, resume_at = *self._accept(winner), winner[3]
                        changed = restart = True
                        break
                if self._out_of_budget():
                    break
            if not restart and pending and not self._out_of_budget():
                winner = self._first_interesting(pending)
                if winner:
                    tree, best, resume_at = *self._accept(winner), winner[3]
                    changed = restart = True
        return tree, best, changed

    def _sure_to_fail(self, tree: ast.AST) -> bool:
        """A candidate that reads a name or `self` attribute nothing sets, or calls one of the
        module's functions with arguments it cannot take, where the original did not: a sure
        NameError, AttributeError or TypeError, not worth a run."""
        if self.allowed_errors is None:
            return False
        errors = sure_errors(tree)
        return errors is not None and not errors <= self.allowed_errors

    def _accept(self, winner: tuple[str, str, ast.AST, int]) -> tuple[ast.AST, str]:
        pass_name, candidate = winner[:2]
        self.stats.accepted += 1
        self.stats.passes[pass_name] = self.stats.passes.get(pass_name, 0) + 1
        self.history.append(candidate)
        return ast.parse(candidate), candidate

    def _first_interesting(self, pending: Sequence[tuple[str, str, ast.AST, int]]):
        """Test a batch (in parallel when allowed); the earliest interesting one wins (deterministic)."""
        results = list(self.pool.map(lambda item: self._test(item[1]), pending))
        return next((item for item, ok in zip(pending, results) if ok), None)

    def _test(self, candidate: str, use_cache: bool = True) -> bool:
        key = hashlib.sha1(candidate.encode()).hexdigest()
        if use_cache and key in self.cache:
            self.stats.cache_hits += 1
            return self.cache[key]
        if self.stats.runs >= self.max_runs or time.monotonic() > self.deadline:
            return False
        self.stats.runs += 1
        try:
            verdict = bool(self.is_interesting(candidate))
        except Exception:  # a predicate that crashes says "not interesting", never aborts the search
            verdict = False
        self.cache[key] = verdict
        return verdict

    def _confirm(self, best: str, original: str) -> str:
        """Re-test the result uncached, to catch a flaky predicate; on failure walk back through
        up to three earlier accepted steps, and finally to the original (known interesting)."""
        for candidate in [best] + self.history[-2:-5:-1]:
            if candidate == original:
                break
            self.stats.runs += 1
            try:
                if self.is_interesting(candidate):
                    if candidate != best:
                        self.stats.stop_reason = "flaky: the smallest result did not hold on a re-check; returned an earlier step"
                    return candidate
            except Exception:
                pass
        if best != original:
            self.stats.stop_reason = "flaky: no reduced result held on a re-check; returned the original"
        return original

    def _out_of_budget(self) -> bool:
        return time.monotonic() > self.deadline or self.stats.runs >= self.max_runs

    def _budget_reason(self) -> str:
        return "budget: max runs reached" if self.stats.runs >= self.max_runs else "budget: time ran out"

    def _finish(self, source: str, started: float, reason: str) -> ReduceResult:
        self.stats.lines_after = len(source.splitlines())
        self.stats.tokens_after = count_tokens(source)
        self.stats.wall_s = round(time.monotonic() - started, 3)
        if not self.stats.stop_reason.startswith("flaky"):
            self.stats.stop_reason = reason
        return ReduceResult(source, self.stats)


class _Inline:
    """A pool stand-in that maps in the calling thread, stopping at the first True."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        for item in items:
            result = fn(item)
            yield result
            if result:
                return


def reduce_source(source: str, is_interesting: Predicate, **options) -> ReduceResult:
    return Reducer(is_interesting, **options).reduce(source)
