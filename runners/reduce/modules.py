"""The passes that take `nn.Module`s apart the way a maintainer does when writing a repro by hand:
an attribute that only ever holds one constant is read as that constant (`self.capacity` ->
`0.0`, its `__init__` parameter then unread), and a module left with no state at all becomes a
plain function (`class Gate(nn.Module): def forward(self, x): ...` compiled as `Gate()` ->
`def gate(x): ...` compiled as `gate`). Each yields (pass name, edit); the predicate decides."""
from __future__ import annotations

import ast
import copy
import re
from typing import Iterator

from runners.reduce.base import Edit
from runners.reduce.paths import resolve, set_child, walk_paths
from runners.reduce.calls import bind_arguments
from runners.reduce.rewrites import _drop_parameter
from runners.reduce.shape import SELF_RETURNING_METHODS, strip_methods

CALL_METHOD = "forward"  # what calling an nn.Module instance runs


def attribute_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Read an attribute that holds one constant as that constant: `self.x = <literal>` in
    `__init__`, or `self.x = param` where every instantiation of the class gives `param` the same
    literal (or leaves it at its literal default). A module-level function counts as a constant
    (`self.embed = patch_embed`, once `function_edits` made the layer a function). The attribute
    must be set nowhere else and read only through `self` inside the class."""
    functions = {node.name for node in getattr(tree, "body", []) if isinstance(node, ast.FunctionDef)}
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        if init is None or not init.args.args:
            continue
        bindings = _instantiation_bindings(tree, cls, init)
        for attribute, value in _init_assignments(init):
            constant = value if _is_literal(value) or _names_one_of(value, functions) else _bound_literal(value, bindings)
            if constant is not None and _only_set_and_read_in(tree, cls, attribute):
                yield "attributes", _read_as_constant(cls.name, attribute, constant)


def layer_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Drop a layer the way a maintainer does: `self.norm = nn.LayerNorm(64)` goes, and each
    `self.norm(h)` becomes `h`, in one edit. Two separate edits (the call, then the unused
    attribute) are not enough where the failure names the module's state: an AOTI package's
    `load_constants` rejecting the first key it does not know, or a state dict's missing keys,
    names the layer whose call alone went (`Constant not found: tags.bias` for
    `Constant not found: emb.weight`), so neither half alone keeps the signature. The attribute
    must be set once in `__init__` and read only as `self.X(one_argument)` inside the class."""
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        if init is None or not init.args.args:
            continue
        for attribute, _ in _init_assignments(init):
            reads = [node for node in _self_attributes(cls, attribute) if isinstance(node.ctx, ast.Load)]
            if reads and _only_set_and_read_in(tree, cls, attribute) and _all_called_on_one(cls, reads):
                yield "layers", _dropped_layer(cls.name, attribute)


def _all_called_on_one(cls: ast.ClassDef, reads: list[ast.Attribute]) -> bool:
    """Every read of the attribute is the callee of a call with one positional argument and nothing else."""
    callees = {id(node.func) for node in ast.walk(cls) if isinstance(node, ast.Call) and len(node.args) == 1
               and not node.keywords and not isinstance(node.args[0], ast.Starred)}
    return all(id(read) in callees for read in reads)


def _dropped_layer(class_name: str, attribute: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        cls = _without_init_assignment(tree, class_name, attribute)
        if cls is None:
            return False
        reads = {id(node) for node in _self_attributes(cls, attribute)}
        for path, node in reversed(list(walk_paths(cls))):  # inner calls first: `self.f(self.f(x))`
            if isinstance(node, ast.Call) and id(node.func) in reads:
                set_child(resolve(cls, path[:-1]), path[-1], node.args[0])
        return True
    return edit


def default_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Put in place a parameter every call gives the same literal (or leaves at its literal
    default), and drop it from the signature and the calls: `nn.Linear(dim, tags)` in an
    `__init__(self, dim=16, tags=1)` that `Tagger()` calls becomes `nn.Linear(16, 1)`. For classes'
    `__init__` and module-level functions; not for a parameter the body assigns."""
    for owner in getattr(tree, "body", []):
        is_class = isinstance(owner, ast.ClassDef)
        function = _method(owner, "__init__") if is_class else owner
        if not isinstance(function, ast.FunctionDef) or owner.decorator_list or not (function.args.args or not is_class):
            continue
        bindings = _instantiation_bindings(tree, owner, function, skip_self=is_class)
        assigned = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        for parameter in (function.args.args[1:] if is_class else function.args.args):
            literal = _bound_literal(ast.Name(id=parameter.arg, ctx=ast.Load()), bindings)
            if literal is not None and parameter.arg not in assigned:
                yield "defaults", _parameter_in_place(owner.name, is_class, parameter.arg, literal)


def function_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """A module with no state (its `__init__`, if any, only calls `super().__init__()`, and
    `forward` never reads `self`) becomes a function, and each `Module()` (with `.eval()`-style
    calls on it) that function. Not the module a script exports: `torch.export` takes modules only."""
    exported = _exported_classes(tree)
    for cls in _classes(tree):
        if cls.name not in exported and _stateless(cls) and _only_instantiated(tree, cls.name):
            yield "functions", _as_function(cls.name, _function_name(tree, cls.name))


def _classes(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in getattr(tree, "body", []) if isinstance(node, ast.ClassDef) and not node.decorator_list]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _is_literal(node: ast.expr) -> bool:
    """A number, string, bool or None (possibly negated), or a tuple of them."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Tuple):
        return all(_is_literal(element) for element in node.elts)
    return isinstance(node, ast.Constant) and not isinstance(node.value, bytes)


def _instantiation_bindings(tree: ast.AST, owner: ast.ClassDef | ast.FunctionDef, function: ast.FunctionDef,
                           skip_self: bool = True) -> list[dict[str, ast.expr]] | None:
    """What each `Class(...)` (or `function(...)`) call binds the parameters to; None when some
    call cannot be bound simply, or the name is used other than by calling it (subclassed, passed around)."""
    calls = _only_called(tree, owner.name)
    if not calls:
        return None
    bindings = [bind_arguments(function.args, call, skip_self=skip_self) for call in calls]
    return None if any(binding is None for binding in bindings) else bindings


def _names(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _bound_literal(value: ast.expr, bindings: list[dict[str, ast.expr]] | None) -> ast.expr | None:
    """The literal every instantiation gives the parameter `value` names, if they all agree."""
    if not isinstance(value, ast.Name) or not bindings:
        return None
    given = [binding.get(value.id) for binding in bindings]
    if any(g is None or not _is_literal(g) for g in given) or len({ast.dump(g) for g in given}) != 1:
        return None
    return given[0]


def _init_assignments(init: ast.FunctionDef) -> Iterator[tuple[str, ast.expr]]:
    """(attribute, value) of each top-level `self.attribute = value` in `__init__`."""
    receiver = init.args.args[0].arg
    for statement in init.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Attribute) and _names(statement.targets[0].value, receiver)):
            yield statement.targets[0].attr, statement.value


def _only_set_and_read_in(tree: ast.AST, cls: ast.ClassDef, attribute: str) -> bool:
    """`attribute` is set once (in `__init__`) and otherwise only read, always as `<self>.attribute`
    inside the class's own methods: nothing outside sees it."""
    inside = {id(node) for node in _self_attributes(cls, attribute)}
    stores = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == attribute:
            if id(node) not in inside:
                return False
            stores += not isinstance(node.ctx, ast.Load)
    return stores == 1


def _self_attributes(cls: ast.ClassDef, attribute: str) -> Iterator[ast.Attribute]:
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and method.args.args:
            receiver = method.args.args[0].arg
            for node in ast.walk(method):
                if isinstance(node, ast.Attribute) and node.attr == attribute and _names(node.value, receiver):
                    yield node


def _without_init_assignment(tree: ast.AST, class_name: str, attribute: str) -> ast.ClassDef | None:
    """The class, its `__init__` without the `self.attribute = ...` statement (None: no such class
    with an `__init__`)."""
    cls = next((n for n in _classes(tree) if n.name == class_name), None)
    init = cls and _method(cls, "__init__")
    if init is None:
        return None
    receiver = init.args.args[0].arg
    init.body = [s for s in init.body if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], ast.Attribute)
                                              and s.targets[0].attr == attribute
                                              and _names(s.targets[0].value, receiver))] or [ast.Pass()]
    return cls


def _read_as_constant(class_name: str, attribute: str, literal: ast.expr) -> Edit:
    def edit(tree: ast.AST) -> bool:
        cls = _without_init_assignment(tree, class_name, attribute)
        if cls is None:
            return False
        reads = {id(node) for node in _self_attributes(cls, attribute)}
        for path, node in list(walk_paths(cls)):
            if id(node) in reads:
                set_child(resolve(cls, path[:-1]), path[-1], copy.deepcopy(literal))
        return True
    return edit


def _parameter_in_place(owner_name: str, is_class: bool, parameter: str, literal: ast.expr) -> Edit:
    def edit(tree: ast.AST) -> bool:
        owner = next((n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == owner_name), None)
        function = _method(owner, "__init__") if is_class and owner is not None else owner
        names = [a.arg for a in function.args.args] if isinstance(function, ast.FunctionDef) else []
        if parameter not in names or function.args.posonlyargs:
            return False
        index = names.index(parameter)
        for path, node in list(walk_paths(function)):
            if isinstance(node, ast.Name) and node.id == parameter and isinstance(node.ctx, ast.Load):
                set_child(resolve(function, path[:-1]), path[-1], copy.deepcopy(literal))
        _drop_parameter(owner_name, is_class, index, index - 1 if is_class else index)(tree)
        for call in _only_called(tree, owner_name):  # the positional ones went with the parameter
            call.keywords = [k for k in call.keywords if k.arg != parameter]
        return True
    return edit


def _names_one_of(node: ast.expr, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _exported_classes(tree: ast.AST) -> set[str]:
    """Classes whose instance an `export(...)` call is given, directly (`export(Net().eval(), ...)`)
    or through a name bound to one (`model = Net()`); every class when the call's module is
    something else (an attribute, a call's result) and cannot be told."""
    classes = {cls.name for cls in _classes(tree)}
    bound = {target.id: _instantiated_class(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    exported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (_names(node.func, "export") or
                                           (isinstance(node.func, ast.Attribute) and node.func.attr == "export")):
            module = node.args[0] if node.args else None
            name = _instantiated_class(module) if module is not None else None
            if name is None and isinstance(module, ast.Name):
                name = module.id if module.id not in bound else bound[module.id]
            exported |= {name} if name else classes
    return exported


def _instantiated_class(node: ast.expr) -> str | None:
    """`Net` for `Net(...)`, also with `.eval()`-style calls on it."""
    node = strip_methods(node)
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


def _stateless(cls: ast.ClassDef) -> bool:
    """Only a docstring, `forward`, and an `__init__` that only calls `super().__init__()`;
    `forward` plain (no decorators, no `super`, a leading `self` it never reads)."""
    forward = _method(cls, CALL_METHOD)
    if forward is None or forward.decorator_list or forward.args.posonlyargs or not forward.args.args:
        return False
    for statement in cls.body:
        if statement is forward or _is_docstring(statement):
            continue
        if not (isinstance(statement, ast.FunctionDef) and statement.name == "__init__" and _only_super_init(statement)):
            return False
    receiver = forward.args.args[0].arg
    return not any(isinstance(node, ast.Name) and node.id in (receiver, "super", "__class__")
                   for statement in forward.body for node in ast.walk(statement))


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, (ast.Expr, ast.Pass)) and (
        isinstance(statement, ast.Pass) or isinstance(statement.value, ast.Constant))


def _only_super_init(init: ast.FunctionDef) -> bool:
    """`def __init__(self): super().__init__()` (a docstring or `pass` aside)."""
    if len(init.args.args) != 1 or init.args.vararg or init.args.kwarg or init.args.kwonlyargs or init.decorator_list:
        return False
    for statement in init.body:
        if _is_docstring(statement):
            continue
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
                and isinstance(call.func.value, ast.Call) and _names(call.func.value.func, "super")):
            return False
    return True


def _only_instantiated(tree: ast.AST, name: str) -> bool:
    """Every use of the class is `Name()` with no arguments."""
    calls = _only_called(tree, name)
    return bool(calls) and not any(call.args or call.keywords for call in calls)


def _only_called(tree: ast.AST, name: str) -> list[ast.Call]:
    """The calls `name(...)`, when every use of `name` is one (else none: it is passed around,
    subclassed or read some other way)."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _names(node.func, name)]
    uses = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == name)
    return calls if uses == len(calls) else []


def _function_name(tree: ast.AST, class_name: str) -> str:
    """The class name in snake case (`MoELayer` -> `moe_layer`), unless the script already uses it."""
    snake = re.sub(r"(?<=[A-Za-z0-9])(?=[A-Z][a-z])", "_", class_name).lower()
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | {
        node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))} | {
        arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments) for arg in node.args}
    name = snake if snake.isidentifier() else "f"
    while name in taken:
        name += "_fn"
    return name


def _as_function(class_name: str, function_name: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        index, cls = next(((i, n) for i, n in enumerate(tree.body)
                           if isinstance(n, ast.ClassDef) and n.name == class_name), (None, None))
        if cls is None:
            return False
        function = copy.deepcopy(_method(cls, CALL_METHOD))
        function.name, function.args.args = function_name, function.args.args[1:]
        tree.body[index] = function
        for path in sorted(_instance_paths(tree, class_name), key=len, reverse=True):
            set_child(resolve(tree, path[:-1]), path[-1], ast.Name(id=function_name, ctx=ast.Load()))
        return True
    return edit


def _instance_paths(tree: ast.AST, class_name: str) -> list[tuple]:
    """Paths of each `Class()`, taken with the `.eval()`-style calls made on it (they return the
    instance itself, and a function has none of them)."""
    found = []
    for path, node in walk_paths(tree):
        if isinstance(node, ast.Call) and _names(node.func, class_name):
            while len(path) >= 2 and path[-1] == ("value", None) and path[-2] == ("func", None):
                attribute, call = resolve(tree, path[:-1]), resolve(tree, path[:-2])
                if not (isinstance(attribute, ast.Attribute) and attribute.attr in SELF_RETURNING_METHODS
                        and isinstance(call, ast.Call)):
                    break
                path = path[:-2]
            found.append(path)
    return found
