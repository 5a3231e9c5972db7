"""Static checks that spare the sandbox a run: a candidate that reads a name nothing binds, a `self` attribute
its class never sets, or calls one of its own functions with arguments it cannot take fails for sure, whatever
the compiler does."""
from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass, field


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
