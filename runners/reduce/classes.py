"""A plain class made for one object (a `Predictor`, `Trainer` or `Engine` that holds a compiled
function) dissolved into module-level code, the way a maintainer writes the repro: its methods
become functions, its attributes names, and its `__init__` runs where the object was made.

    class Predictor:                                 def _predict_impl(tokens): ...
        def __init__(self):                          def predictor(tokens):
            self._predict = torch.compile(...)    ->     return _predict(tokens)
        def _predict_impl(self, tokens): ...         _predict = torch.compile(_predict_impl, ...)
        def __call__(self, tokens):                  label = predictor(tokens)
            return self._predict(tokens)
    label = Predictor()(tokens)

The inline pass then takes it the rest of the way (`torch.compile(_predict_impl, ...)(tokens)`).
Before, nothing took such a class apart: the instance and module passes know `nn.Module`s, and
inlining knows functions and methods called through `self`.

An `nn.Module` made for one object dissolves the same way, `forward` standing for `__call__`
and its `super().__init__()` dropped: a loss module holding the model and a weight tensor,
compiled as `torch.compile(loss_fn)`, becomes a function reading `model_` and `class_weights`,
compiled as `torch.compile(weighted_loss)`, which is how a maintainer writes it. Not a module the
script exports (`torch.export` takes modules only); anything `nn.Module` itself gives the object
(`self.training`, `.parameters()`) has no module-level name, so a candidate reading it is refused
before it runs.

Only where it is one object and the rewrite is plain: no bases but `nn.Module`, no decorators or
dunders besides `__init__` and `__call__`, `self` only ever read as `self.name`, one `Class(...)`
in the file at module level, used at once (`Class(...)(x)`, `Class(...).run(x)`) or bound to a
name used only that way, or handed to `torch.compile` as the callable it compiles. A method that
sets an attribute declares it `global`. The predicate decides the rest.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Iterator

from runners.reduce.base import Edit, NodePath
from runners.reduce.calls import bind_arguments
from runners.reduce.folds import SCOPES
from runners.reduce.modules import _exported_classes, _function_name, _is_docstring, _method, _names
from runners.reduce.paths import resolve, set_child, walk_paths
from runners.reduce.rewrites import _enclosing_statement
from runners.reduce.shape import is_compile

CALL_METHOD = "__call__"  # the key of the function a call of the object runs, for modules too
MODULE_CALL_METHOD = "forward"
INIT = "__init__"


@dataclass
class Plan:
    """What dissolving one class takes: the class's index in the module, the module-level name of
    each attribute and method, and where and how its one instance is made and used."""
    index: int
    names: dict[str, str]
    instance_path: NodePath
    bound_to: str | None  # `obj` of `obj = Class(...)`; None when the instance is used at once


def class_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    exported = None
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.ClassDef) and _plan(tree, node.name) is not None:
            exported = _exported_classes(tree) if exported is None else exported
            if node.name not in exported:
                yield "classes", _dissolve(node.name)


def _dissolve(class_name: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        plan = _plan(tree, class_name)
        if plan is None:
            return False
        cls = tree.body[plan.index]
        setup = _bindings(cls, resolve(tree, plan.instance_path)) + _init_body(cls, plan.names)
        block, index = _enclosing_statement(tree, plan.instance_path)
        if plan.bound_to is None:
            _use_at(tree, plan.instance_path[:-1], plan.instance_path[-1], plan.names)
            block[index:index] = setup
        else:
            _rebind_uses(tree, plan.bound_to, plan.names)
            block[index:index + 1] = setup or [ast.Pass()]
        at = next(i for i, node in enumerate(tree.body) if node is cls)
        tree.body[at:at + 1] = _module_level(cls, plan.names)
        return True
    return edit


def _plan(tree: ast.AST, class_name: str) -> Plan | None:
    index, cls = next(((i, n) for i, n in enumerate(tree.body) if isinstance(n, ast.ClassDef) and n.name == class_name),
                      (None, None))
    if cls is None or not _plain(cls):
        return None
    uses = [(path, node) for path, node in walk_paths(tree) if isinstance(node, ast.Name) and node.id == class_name]
    if len(uses) != 1 or uses[0][0][-1] != ("func", None):
        return None
    instance_path = uses[0][0][:-1]
    if _bindings(cls, resolve(tree, instance_path)) is None:
        return None
    names = _module_names(tree, cls)
    if any(isinstance(resolve(tree, instance_path[:depth]), SCOPES) for depth in range(1, len(instance_path))):
        return None
    if _enclosing_statement(tree, instance_path) is None:
        return None
    parent, step = resolve(tree, instance_path[:-1]), instance_path[-1]
    if _usable_at(parent, step, names):
        return Plan(index, names, instance_path, None)
    bound_to = _bound_name(parent, step)
    if bound_to is not None and _only_used_through(tree, bound_to, names):
        return Plan(index, names, instance_path, bound_to)
    return None


def _plain(cls: ast.ClassDef) -> bool:
    """No bases (but `nn.Module`), keywords or decorators; a body of methods (a leading `self`, no
    decorators, no dunders but `__init__` and, outside a module, `__call__`) and plain class
    attributes; `self` only read as `self.name`, attributes set only directly in a method's body,
    and an `__init__` that returns nothing (its body runs at module level; a module's
    `super().__init__()` goes)."""
    if cls.keywords or cls.decorator_list or len(cls.bases) > 1 or (cls.bases and not _is_module(cls)):
        return False
    for statement in cls.body:
        if _is_docstring(statement) or _field_targets(statement):
            continue
        if not isinstance(statement, ast.FunctionDef):
            return False
        if _is_module(cls) and statement.name == CALL_METHOD:
            return False
        if not _plain_method(_without_super_init(statement) if _is_module(cls) else statement):
            return False
    return not (_is_module(cls) and _inherited_reads(cls))


def _inherited_reads(cls: ast.ClassDef) -> set[str]:
    """`self.name`s a module reads that its own class never defines or sets: what `nn.Module` gives
    (`self.register_buffer(...)`, `self.training`), which a function has no name for."""
    defined = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)} | {
        t.id for n in cls.body for t in _field_targets(n)}
    read = set()
    for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(_without_super_init(method)):
            if isinstance(node, ast.Attribute) and _is_receiver(node, method.args.args[0].arg):
                (read if isinstance(node.ctx, ast.Load) else defined).add(node.attr)
    return read - defined


def _field_targets(statement: ast.stmt) -> list[ast.Name]:
    """The names a plain class attribute binds: `size = 8`, `a = b = 0`, or `seed: int = 1` (its
    annotation goes with the class); none for anything else (`seed: int` alone binds nothing)."""
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        return statement.targets
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
        return [statement.target]
    return []


def _is_module(cls: ast.ClassDef) -> bool:
    """`class Net(nn.Module)` (or `torch.nn.Module`, or `Module` imported by name)."""
    if len(cls.bases) != 1:
        return False
    base = cls.bases[0]
    return _names(base, "Module") or (isinstance(base, ast.Attribute) and base.attr == "Module"
                                      and ast.unparse(base.value) in ("nn", "torch.nn"))


def _call_method(cls: ast.ClassDef) -> str:
    return MODULE_CALL_METHOD if _is_module(cls) else CALL_METHOD


def _without_super_init(method: ast.FunctionDef) -> ast.FunctionDef:
    """An `__init__` without its `super().__init__()` statements (a module's, which a function
    does not need); any other method as it is."""
    if method.name != INIT:
        return method
    trimmed = copy.copy(method)
    trimmed.body = [s for s in method.body if not _is_super_init(s)] or [ast.Pass()]
    return trimmed


def _is_super_init(statement: ast.stmt) -> bool:
    call = statement.value if isinstance(statement, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == INIT
            and isinstance(call.func.value, ast.Call) and _names(call.func.value.func, "super"))


def _plain_method(method: ast.FunctionDef) -> bool:
    args = method.args
    if method.decorator_list or args.posonlyargs or not args.args:
        return False
    if method.name.startswith("__") and method.name not in (INIT, CALL_METHOD):
        return False
    receiver = args.args[0].arg
    parents = {id(child): node for node in ast.walk(method) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(method):
        if isinstance(node, ast.Name) and node.id in ("super", "__class__"):
            return False
        if isinstance(node, ast.Name) and node.id == receiver and not (
                isinstance(parents[id(node)], ast.Attribute) and isinstance(node.ctx, ast.Load)):
            return False
        if isinstance(node, ast.Attribute) and _is_receiver(node, receiver) and not isinstance(node.ctx, ast.Load) \
                and _in_nested_scope(node, method, parents):
            return False
    if method.name == INIT:
        return not any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal))
                       and not _in_nested_scope(node, method, parents) for node in ast.walk(method))
    return True


def _in_nested_scope(node: ast.AST, method: ast.FunctionDef, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    while parent is not None and parent is not method:
        if isinstance(parent, SCOPES):
            return True
        parent = parents.get(id(parent))
    return False


def _is_receiver(node: ast.Attribute, receiver: str) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == receiver


def _module_names(tree: ast.AST, cls: ast.ClassDef) -> dict[str, str]:
    """Attribute or method -> its module-level name: its own, unless some other name in the file
    already reads that way (then with `_` added); `__call__` -> the class in snake case."""
    own = {id(n) for n in cls.body if isinstance(n, ast.FunctionDef)} | {
        id(t) for n in cls.body for t in _field_targets(n)}
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and id(node) not in own} | {
        node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and id(node) not in own} | {
        arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
        for arg in node.posonlyargs + node.args + node.kwonlyargs + [node.vararg, node.kwarg] if arg is not None}
    members = [n.name for n in cls.body if isinstance(n, ast.FunctionDef) and n.name not in (INIT, _call_method(cls))]
    members += [t.id for n in cls.body for t in _field_targets(n)]
    members += [node.attr for method in cls.body if isinstance(method, ast.FunctionDef)
                for node in ast.walk(method) if isinstance(node, ast.Attribute) and _is_receiver(node, method.args.args[0].arg)]
    names = {}
    if any(isinstance(n, ast.FunctionDef) and n.name == _call_method(cls) for n in cls.body):
        names[CALL_METHOD] = _function_name(tree, cls.name)
        taken.add(names[CALL_METHOD])
    for member in dict.fromkeys(members):
        name = member
        while name in taken:
            name += "_"
        names[member] = name
        taken.add(name)
    return names


def _usable_at(parent: ast.AST, step: tuple, names: dict[str, str]) -> bool:
    """The instance is used once, at once: called (`Class(...)(x)`), read (`Class(...).run`) or
    compiled (`torch.compile(Class(...))`, which compiles what a call of it runs)."""
    if isinstance(parent, ast.Call) and (step == ("func", None) or (step == ("args", 0) and is_compile(parent))):
        return CALL_METHOD in names
    return isinstance(parent, ast.Attribute) and step == ("value", None) and parent.attr in names


def _bound_name(parent: ast.AST, step: tuple) -> str | None:
    if isinstance(parent, ast.Assign) and step == ("value", None) and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    return None


def _only_used_through(tree: ast.AST, name: str, names: dict[str, str]) -> bool:
    """`name` is bound once, and otherwise only called or read as `name.member`."""
    stores = 0
    for path, node in walk_paths(tree):
        if isinstance(node, ast.arg) and node.arg == name:
            return False
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if not isinstance(node.ctx, ast.Load):
            stores += 1
        elif not _usable_at(resolve(tree, path[:-1]), path[-1], names):
            return False
    return stores == 1


def _use_at(tree: ast.AST, parent_path: NodePath, step: tuple, names: dict[str, str]) -> None:
    """The instance at `parent_path`/`step` replaced by the function or name it is used as."""
    parent = resolve(tree, parent_path)
    if isinstance(parent, ast.Call):
        set_child(parent, step, ast.Name(id=names[CALL_METHOD], ctx=ast.Load()))
    else:
        set_child(resolve(tree, parent_path[:-1]), parent_path[-1], ast.Name(id=names[parent.attr], ctx=parent.ctx))


def _rebind_uses(tree: ast.AST, bound_to: str, names: dict[str, str]) -> None:
    uses = [path for path, node in walk_paths(tree)
            if isinstance(node, ast.Name) and node.id == bound_to and isinstance(node.ctx, ast.Load)]
    for path in sorted(uses, key=len, reverse=True):
        _use_at(tree, path[:-1], path[-1], names)


def _bindings(cls: ast.ClassDef, instance: ast.Call) -> list[ast.stmt] | None:
    """`parameter = argument` for each `__init__` parameter (none for `model = model`); None when
    the call does not fit `__init__` simply."""
    init = _method(cls, INIT)
    if init is None:
        return None if instance.args or instance.keywords else []
    binding = bind_arguments(init.args, instance, skip_self=True)
    if binding is None:
        return None
    return [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=copy.deepcopy(value))
            for name, value in binding.items() if not (isinstance(value, ast.Name) and value.id == name)]


def _init_body(cls: ast.ClassDef, names: dict[str, str]) -> list[ast.stmt]:
    init = _method(cls, INIT)
    if init is None:
        return []
    return _rewritten([s for s in init.body if not (_is_docstring(s) or _is_super_init(s))], names, init.args.args[0].arg)


def _module_level(cls: ast.ClassDef, names: dict[str, str]) -> list[ast.stmt]:
    """The class's attributes as assignments, then its methods (but `__init__`) as functions."""
    statements = [ast.Assign(targets=[ast.Name(id=names[t.id], ctx=ast.Store()) for t in _field_targets(n)],
                             value=copy.deepcopy(n.value)) for n in cls.body if _field_targets(n)]
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and method.name != INIT:
            statements.append(_as_function(method, names, method.name == _call_method(cls)))
    return statements


def _as_function(method: ast.FunctionDef, names: dict[str, str], runs_on_call: bool) -> ast.FunctionDef:
    receiver = method.args.args[0].arg
    function = copy.deepcopy(method)
    function.name = names[CALL_METHOD] if runs_on_call else names[method.name]
    function.args.args = function.args.args[1:]
    function.body = _rewritten(function.body, names, receiver)
    stored = sorted({names[node.attr] for node in ast.walk(method) if isinstance(node, ast.Attribute)
                     and _is_receiver(node, receiver) and not isinstance(node.ctx, ast.Load)})
    if stored:
        function.body.insert(0, ast.Global(names=stored))
    return function


def _rewritten(statements: list[ast.stmt], names: dict[str, str], receiver: str) -> list[ast.stmt]:
    """`receiver.member` -> the member's module-level name, loads and stores alike."""
    class Rewrite(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if _is_receiver(node, receiver) and node.attr in names:
                return ast.Name(id=names[node.attr], ctx=node.ctx)
            return self.generic_visit(node)
    return [Rewrite().visit(copy.deepcopy(statement)) for statement in statements]
