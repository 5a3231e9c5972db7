"""The passes that know what Python code means: instantiate a layer instead of its wrapper, drop a parameter with
its call-site arguments, inline a variable or a function used once. Each yields (pass name, edit), coarse
edits first."""
from __future__ import annotations

import ast
from typing import Iterator

from runners.reduce.base import Edit, NodePath
from runners.reduce.calls import bind_arguments, substitute
from runners.reduce.paths import replace_with, resolve, set_child, statement_lists, walk_paths
from runners.reduce.shape import is_compile, is_export, strip_methods, torch_imports


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
    replace = replace_with(path, replacement)

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
    binding = bind_arguments(init.args, call, skip_self=True)
    if binding is None:
        return []
    layers = []
    for statement in init.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.value, ast.Call)
                and isinstance(statement.targets[0], ast.Attribute) and isinstance(statement.targets[0].value, ast.Name)
                and not any(isinstance(n, ast.Name) and n.id == init.args.args[0].arg for n in ast.walk(statement.value))):
            layers.append(substitute(statement.value, binding))
    return layers


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
    yield from call_parameter_edits(tree)
    for cls, method in _self_called_methods(tree):
        for index in range(1, len(method.args.args)):
            yield "parameters", _drop_method_parameter(cls.name, method.name, index)


def _self_called_methods(tree: ast.AST) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef]]:
    """Each plain method of a module-level class that is used only as `self.method(...)` calls
    inside its class: every call site is then known, so a parameter or the method itself can go.
    (Not `forward`/`__call__` or other dunders, which Python and torch call themselves.)"""
    uses: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            uses[node.attr] = uses.get(node.attr, 0) + 1
    for cls in getattr(tree, "body", []):
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if (isinstance(method, ast.FunctionDef) and not method.decorator_list and not method.name.startswith("__")
                    and method.name not in CALL_METHODS and method.args.args and method.args.args[0].arg == "self"
                    and 0 < len(_self_calls(cls, method.name)) == uses.get(method.name, 0)):
                yield cls, method


def _self_calls(cls: ast.ClassDef, name: str) -> list[ast.Call]:
    """The `self.name(...)` calls inside `cls`."""
    return [node for node in ast.walk(cls) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == name and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"]


def _class_method(tree: ast.AST, class_name: str, name: str) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    method = cls and next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    return (cls, method) if method is not None else None


def _drop_method_parameter(class_name: str, method_name: str, param_index: int) -> Edit:
    """Drop a method's parameter and its argument at each `self.method(...)` call (see `_self_called_methods`)."""
    def edit(tree: ast.AST) -> bool:
        found = _class_method(tree, class_name, method_name)
        if found is None or param_index >= len(found[1].args.args) or found[1].args.posonlyargs:
            return False
        cls, method = found
        return _drop_from_calls(_self_calls(cls, method_name), method.args, param_index)
    return edit


def _drop_from_calls(calls: list[ast.Call], args: ast.arguments, param_index: int) -> bool:
    """Drop a method's parameter (`self` is 0) from `args`, and its argument from each of `calls`
    (calls through an instance, whose argument i is parameter i + 1). False when a call passes
    *args or **kwargs, or does not pass a required parameter: not the call it looked like."""
    parameter = args.args[param_index].arg
    defaults_start = len(args.args) - len(args.defaults)
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return False
        if param_index - 1 < len(call.args):
            del call.args[param_index - 1]
        elif param_index < defaults_start and not any(k.arg == parameter for k in call.keywords):
            return False
        call.keywords = [k for k in call.keywords if k.arg != parameter]
    if param_index >= defaults_start:
        del args.defaults[param_index - defaults_start]
    del args.args[param_index]
    return True


CALL_METHODS = ("forward", "__call__")  # what calling an instance runs


def call_parameter_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Drop a parameter of a module's `forward` (or `__call__`) with the matching argument where an
    instance is called: `Net()(x, mask)`, `model(x, mask)` for `model = Net()`, the compiled
    `torch.compile(model)(x, mask)`, and the exported `torch.export.export(model, (x, mask))`.
    Without this a parameter `forward` never reads stays, and the call must pass something for
    it: the reducer shrank that argument to `()`. Only a parameter
    the body never mentions goes: one the body assigns (`x = self.embed(tokens)`) still lets a
    wrapper give way to its inner layer (`Encoder()(x, mask)` -> `Attention()(x, mask)`), which
    the 93-line graph-break report needs (123 tokens instead of 58 when it went)."""
    for owner in getattr(tree, "body", []):
        if not isinstance(owner, ast.ClassDef):
            continue
        method = next((n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name in CALL_METHODS), None)
        if method is None or method.args.vararg or method.args.posonlyargs:
            continue
        mentioned = {n.id for statement in method.body for n in ast.walk(statement) if isinstance(n, ast.Name)}
        for index in range(1, len(method.args.args)):
            if method.args.args[index].arg not in mentioned:
                yield "parameters", _drop_call_parameter(owner.name, method.name, index)


def _drop_call_parameter(class_name: str, method_name: str, param_index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
        method = owner and next((n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == method_name), None)
        if method is None or param_index >= len(method.args.args):
            return False
        args = method.args
        parameter = args.args[param_index].arg
        sites = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and _calls_instance(call.func, class_name, tree)]
        imports = torch_imports(tree)  # `export(Net(), (x, mask))` after `from torch.export import export`
        exports = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and is_export(call, imports)
                   and len(call.args) >= 2 and _calls_instance(call.args[0], class_name, tree)]
        if not sites and not exports:
            return False
        defaults_start = len(args.args) - len(args.defaults)
        if not all(_drop_example_input(call, param_index - 1, parameter, param_index < defaults_start) for call in exports):
            return False
        return _drop_from_calls(sites, args, param_index)
    return edit


def _drop_example_input(call: ast.Call, position: int, parameter: str, required: bool) -> bool:
    """`torch.export.export(Net(), (x, species), dynamic_shapes=...)` without the input at `position`
    (and its `dynamic_shapes` entry): False when the inputs are not written out, or a required
    parameter is not among them."""
    inputs = call.args[1]
    if not isinstance(inputs, (ast.Tuple, ast.List)) or any(isinstance(item, ast.Starred) for item in inputs.elts):
        return False
    if position < len(inputs.elts):
        del inputs.elts[position]
    elif required:
        return False
    for keyword in call.keywords:
        spec = keyword.value
        if keyword.arg != "dynamic_shapes":
            continue
        if isinstance(spec, ast.Dict):
            kept = [(k, v) for k, v in zip(spec.keys, spec.values)
                    if not (isinstance(k, ast.Constant) and k.value == parameter)]
            spec.keys, spec.values = [k for k, _ in kept], [v for _, v in kept]
        elif isinstance(spec, (ast.Tuple, ast.List)) and position < len(spec.elts):
            del spec.elts[position]
    return True


def _calls_instance(func: ast.expr, class_name: str, tree: ast.AST) -> bool:
    """Whether calling `func` calls an instance of `class_name`: `Cls(...)`, a name bound to one, or
    `torch.compile` of either (a method chain such as `.eval()` on the way is allowed)."""
    func = strip_methods(func)
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == class_name:
        return True
    if isinstance(func, ast.Call) and is_compile(func) and func.args:
        return _calls_instance(func.args[0], class_name, tree)
    if isinstance(func, ast.Name):
        return any(isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                   and node.targets[0].id == func.id and _calls_instance(node.value, class_name, tree)
                   for node in ast.walk(tree))
    return False


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
    module-level function (or a method, through `self`) called once (its body moved to the call,
    see `_inline_call`)."""
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
    for cls, method in _self_called_methods(tree):
        if len(_self_calls(cls, method.name)) == 1:
            yield "inline", _inline_call(method.name, cls.name)


def _inline_call(name: str, class_name: str | None = None) -> Edit:
    """`def f(a): s1; return e` called once as `... f(x) ...` in some statement S: before S put
    `a = x; s1`, replace the call by `e` (a bare `f(x)` statement just becomes the body) and
    delete the def. Only for plain functions: no decorators, *args or yield, `return` only last.
    With `class_name`, the method `name` of that class called once as `self.name(x)` in another
    of its methods (`self` is the same object in both)."""
    def edit(tree: ast.AST) -> bool:
        if class_name is None:
            owner, function = tree, next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        else:
            owner, function = _class_method(tree, class_name, name) or (None, None)
        if function is None or function.decorator_list or not _straight_line(function):
            return False
        method_calls = {id(call) for call in _self_calls(owner, name)} if class_name is not None else None

        def is_site(node: ast.Call) -> bool:
            if method_calls is not None:
                return id(node) in method_calls
            return isinstance(node.func, ast.Name) and node.func.id == name
        site = next(((path, node) for path, node in walk_paths(tree) if isinstance(node, ast.Call) and is_site(node)), None)
        if site is None:
            return False
        call_path, call = site
        statement_at = _enclosing_statement(tree, call_path)
        binding = bind_arguments(function.args, call, skip_self=class_name is not None)
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
            set_child(resolve(tree, call_path[:-1]), call_path[-1], value if value is not None else ast.Constant(None))
            replacement = [statement]
        block[index:index + 1] = prologue + body + replacement or [ast.Pass()]
        owner.body.remove(function)
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
                            set_child(resolve(tree, path[:-1]), path[-1], value)
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
