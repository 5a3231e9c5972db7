"""The folds pass: rewrites that keep what a program does and leave less to read.

What the other passes leave behind is often code a maintainer would simply write shorter:
`patches.reshape(-1, 4 * 4)` where a class constant was put in place, `patches = images` left from a
line the expression pass cut to its operand, `program = torch.export.export(...)` once the `print(program)`
below it went. No deletion or replacement by a part reaches these in one step, so they stayed. Each
fold is one candidate (all literal arithmetic at once, all unread results at once, one copy at a
time), and the predicate still decides: a fold the program's meaning depends on after all (a
copy whose source a later line mutates in place, say) is refused like any other edit.

- `4 * 4` -> `16`: arithmetic on two numbers, when the result is no longer than the expression;
  `len('documentary')` -> `11`, `len([a, b])` -> `2`: the length of a written-out string, list,
  tuple or set whose items call nothing (a count a user wrote as the thing counted);
- `(torch.compile(m) if True else m)` -> `torch.compile(m)`, `if 0: ...` -> its `else`: a choice on a
  constant (a flag the constant pass or an inlining put in place) is the branch it takes;
- `a = b; ... f(a)` -> `... f(b)`: a name bound to another name is replaced by it where it is read
  in the rest of its function (or module), until either is bound again;
- `x = f(...)` with `x` read nowhere -> `f(...)`: the call stays, the name goes;
- `[block for i in range(1)]` -> `[block]`: a comprehension (or generator) over one value, its element
  not reading the loop variable; in a second candidate, `(Embedding(n, 8) for n in (5,))` ->
  `[Embedding(5, 8)]`, the one value (a constant or a name) in the loop variable's place;
- `layers = []; layers.append(a); layers.append(b)` -> `layers = [a, b]`: a written-out list and the
  appends that follow it back to back (also when the list is an item of an unpacking, `layers, d =
  [], 4`, which is then split), the list bound where the first append was;
- `f(*[a, b])` -> `f(a, b)`: a written-out list or tuple spread into a call or another display;
- `a, b = (x, y)` -> `a = x` and `b = y`: an unpacking of a written-out tuple, when no item reads a
  name bound before it (`a, b = b, a` stays); the parts that then do nothing (`a = a`, a name or
  constant bound to a name nothing reads) go in the same candidate;
- `self.register_buffer("mean", m)` -> `self.mean = m`: a buffer held as a plain attribute (all of
  them in one candidate). A buffer differs only in what `state_dict()` and `.to()` see, which a repro
  rarely needs, and a module whose `__init__` calls a method of `nn.Module` cannot dissolve into a
  function (classes.py).
"""
from __future__ import annotations

import ast
import copy
import operator
from typing import Iterator

from runners.reduce.base import Edit, NodePath
from runners.reduce.dead import _reads, _unread_assignment, target_names
from runners.reduce.literals import single_value
from runners.reduce.paths import resolve, statement_lists, walk_paths
from runners.reduce.calls import substitute

ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
              ast.Mod: operator.mod, ast.Div: operator.truediv}
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
MAX_FOLDED = 10 ** 9  # a larger result is a number nobody reads at a glance


def fold_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Literal arithmetic first (one candidate for all of it), then unread results, then each copy."""
    if any(_folded(node) is not None for node in ast.walk(tree)):
        yield "folds", _fold_arithmetic
    if any(_constant_choice(node) is not None for node in ast.walk(tree)):
        yield "folds", _fold_constant_choices
    if _unread_results(tree):
        yield "folds", _keep_calls_only
    for reading in (False, True):
        if _one_value_comprehensions(tree, reading):
            yield "folds", _fold_comprehensions(reading)
    if _spread_literals(copy.deepcopy(tree)):
        yield "folds", _spread_literals
    for path, field, index, name in _append_chains(tree):
        yield "folds", _fold_appends(path, field, index, name)
    for path, index in _copies(tree):
        yield "folds", _propagate_copy(path, index)
    for path, index in _unpackings(tree):
        yield "folds", _split_unpacking(path, index)
    if _buffer_registrations(tree):
        yield "folds", _buffers_as_attributes


# -- literal arithmetic -------------------------------------------------------------------------------

def _number(node: ast.AST) -> int | float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _literal_length(node: ast.AST) -> ast.Constant | None:
    """`len(...)` of a written-out string, list, tuple or set (no starred items, no calls in them,
    and a set only of distinct constants), as a constant."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1 and not node.keywords):
        return None
    (counted,) = node.args
    if isinstance(counted, ast.Constant) and isinstance(counted.value, (str, bytes)):
        return ast.Constant(len(counted.value))
    if not isinstance(counted, (ast.List, ast.Tuple, ast.Set)):
        return None
    if any(isinstance(inner, (ast.Starred, ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr))
           for inner in ast.walk(counted)):
        return None
    if isinstance(counted, ast.Set):
        if not all(isinstance(item, ast.Constant) for item in counted.elts):
            return None
        return ast.Constant(len({item.value for item in counted.elts}))
    return ast.Constant(len(counted.elts))


def _folded(node: ast.AST) -> ast.Constant | None:
    """The constant `node` evaluates to, if it is arithmetic on two numbers (no longer folded) or
    the length of a written-out sequence."""
    length = _literal_length(node)
    if length is not None:
        return length
    if not (isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC):
        return None
    left, right = _number(node.left), _number(node.right)
    if left is None or right is None:
        return None
    try:
        value = ARITHMETIC[type(node.op)](left, right)
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    result = ast.Constant(value)
    if abs(value) > MAX_FOLDED or len(ast.unparse(result)) > len(ast.unparse(node)):
        return None
    return result


def _fold_arithmetic(tree: ast.AST) -> bool:
    class Folder(ast.NodeTransformer):
        changed = False

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            self.generic_visit(node)  # inner first: `2 * 4 * 4` folds all the way
            folded = _folded(node)
            if folded is None:
                return node
            Folder.changed = True
            return folded

        visit_Call = visit_BinOp  # `len('abc') * 2` folds all the way too
    Folder().visit(tree)
    return Folder.changed


# -- choices on a constant ----------------------------------------------------------------------------

def _constant_choice(node: ast.AST) -> bool | None:
    """Which way `a if <constant> else b` or `if <constant>:` goes; None for any other node."""
    if isinstance(node, (ast.IfExp, ast.If)) and isinstance(node.test, ast.Constant):
        return bool(node.test.value)
    return None


def _fold_constant_choices(tree: ast.AST) -> bool:
    class Folder(ast.NodeTransformer):
        changed = False

        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            self.generic_visit(node)
            taken = _constant_choice(node)
            if taken is None:
                return node
            Folder.changed = True
            return node.body if taken else node.orelse

        def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
            self.generic_visit(node)
            taken = _constant_choice(node)
            if taken is None:
                return node
            Folder.changed = True
            return (node.body if taken else node.orelse) or ast.Pass()
    Folder().visit(tree)
    return Folder.changed


# -- unread results -----------------------------------------------------------------------------------

def _unread_results(tree: ast.AST) -> list[ast.Assign]:
    """`x = f(...)` statements in function and module bodies whose name nothing reads."""
    read = _reads(tree)[0] | {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))
                                for name in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            continue  # a class body's names are its fields
        for statement in getattr(node, "body", []) if isinstance(node, (ast.Module, ast.FunctionDef)) else []:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Call)
                    and statement.targets[0].id not in read and not statement.targets[0].id.startswith("__")):
                found.append(statement)
    return found


def _keep_calls_only(tree: ast.AST) -> bool:
    unread = {id(statement) for statement in _unread_results(tree)}
    if not unread:
        return False
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            body[:] = [ast.Expr(value=s.value) if id(s) in unread else s for s in body]
    return True


# -- copies -------------------------------------------------------------------------------------------

def _scope_bodies(tree: ast.AST) -> Iterator[tuple[NodePath, ast.AST]]:
    """The module and every function: the blocks a name's later reads all follow in."""
    for path, node in walk_paths(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield path, node


def _is_copy(statement: ast.stmt, constants: bool = False) -> tuple[str, str | None] | None:
    """`a = b` as ("a", "b"); with `constants`, `a = 1` as ("a", None) too."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)):
        return None
    if isinstance(statement.value, ast.Name) and statement.targets[0].id != statement.value.id:
        return statement.targets[0].id, statement.value.id
    if constants and isinstance(statement.value, ast.Constant):
        return statement.targets[0].id, None
    return None


def _copies(tree: ast.AST) -> list[tuple[NodePath, int]]:
    return [(path, index) for path, scope in _scope_bodies(tree) for index, statement in enumerate(scope.body)
            if _is_copy(statement) and _copy_uses(scope, index) is not None]


def _stores(node: ast.AST, name: str) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id == name and isinstance(inner.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(inner, (ast.Global, ast.Nonlocal)) and name in inner.names:
            return True
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner.name == name:
            return True
        if isinstance(inner, ast.alias) and (inner.asname or inner.name.split(".")[0]) == name:
            return True
    return False


def _read_in_nested_scope(scope: ast.AST, name: str) -> bool:
    """Whether a function, lambda or class inside `scope` reads `name`: it may run at any time, before or
    after the copy is bound again."""
    for node in ast.walk(scope):
        if node is not scope and isinstance(node, SCOPES):
            if any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(node)):
                return True
    return False


def _copy_uses(scope: ast.AST, index: int, constants: bool = False) -> list[ast.stmt] | None:
    """The statements after `a = b` whose reads of `a` may read `b` instead: up to and including the
    one that binds `a` again (its value still reads the copy). None when that is not safe to say:
    `a` or `b` read from a nested scope, `b` bound again while `a` is live, or `a` bound again
    inside a compound statement (only sometimes)."""
    copy_name, source = _is_copy(scope.body[index], constants)
    if _read_in_nested_scope(scope, copy_name) or (source and _read_in_nested_scope(scope, source)):
        return None
    uses = []
    for statement in scope.body[index + 1:]:
        if source and _stores(statement, source):
            return None
        rebinds = isinstance(statement, (ast.Assign, ast.AnnAssign)) and _stores(statement, copy_name)
        if rebinds:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(_stores(target, copy_name) and target_names(target) != [copy_name] for target in targets):
                return None  # `a.x, a = ...`: part of the target still reads the copy
            uses.append(statement)
            return uses
        if _stores(statement, copy_name):
            return None  # `a += 1`, `for a in ...`, a branch that binds it: not always the copy
        uses.append(statement)
    return uses


def _propagate_copy(path: NodePath, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        scope = resolve(tree, path)
        if index >= len(scope.body) or not _read_through(scope, index):
            return False
        del scope.body[index]
        if not scope.body:
            scope.body.append(ast.Pass())
        return True
    return edit


def _read_through(scope: ast.AST, index: int, constants: bool = False) -> bool:
    """Replace the reads of the copy at `scope.body[index]` by what it copies (a name, or with
    `constants` a constant too); False, changing nothing, where that is not safe (`_copy_uses`)."""
    statement = scope.body[index]
    if not _is_copy(statement, constants):
        return False
    uses = _copy_uses(scope, index, constants)
    if uses is None:
        return False
    binding = {statement.targets[0].id: statement.value}
    for position, use in enumerate(uses, start=index + 1):  # the statements right after the copy
        if isinstance(use, (ast.Assign, ast.AnnAssign)):
            if use.value is not None:  # the value only: the targets bind, they do not read
                use.value = substitute(use.value, binding)
        else:
            scope.body[position] = substitute(use, binding)
    return True


# -- comprehensions over one value --------------------------------------------------------------------

def _one_value_comprehensions(tree: ast.AST, reading: bool = False) -> list[ast.ListComp | ast.GeneratorExp]:
    """`[e for v in range(1)]` / `[e for v in [x]]` / `(e for v in (x,))`: one generator, no
    condition, over one value. Without `reading`, those whose `e` does not read `v` (a maintainer
    writes `[e]`); with it, those whose `e` does, the one value a constant or a name, which then takes
    `v`'s place (`nn.ModuleList(nn.Embedding(n, 8) for n in (5,))` -> `nn.ModuleList([nn.Embedding(5, 8)])`).
    Two kinds, two candidates: the first is the surer."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            generator = node.generators[0]
            bound = set(target_names(generator.target))
            value = single_value(generator.iter)
            if generator.ifs or generator.is_async or value is None:
                continue
            reads = any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(node.elt))
            if not reading and not reads:
                found.append(node)
            elif (reading and reads and isinstance(generator.target, ast.Name) and isinstance(value, (ast.Constant, ast.Name))
                  and not any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.elt))):
                found.append(node)
    return found


def _fold_comprehensions(reading: bool) -> Edit:
    """Every one-value comprehension of the kind (see `_one_value_comprehensions`) becomes a
    one-element list (one candidate for all of them)."""
    def edit(tree: ast.AST) -> bool:
        folded = {id(node) for node in _one_value_comprehensions(tree, reading)}

        class Folder(ast.NodeTransformer):
            def fold(self, node: ast.ListComp | ast.GeneratorExp) -> ast.AST:
                self.generic_visit(node)
                if id(node) not in folded:
                    return node
                element = node.elt
                if reading:
                    name, value = node.generators[0].target.id, single_value(node.generators[0].iter)
                    element = substitute(element, {name: value})
                return ast.List(elts=[element], ctx=ast.Load())
            visit_ListComp = visit_GeneratorExp = fold
        Folder().visit(tree)
        return bool(folded)
    return edit


# -- a list built by appends, a list spread ----------------------------------------------------------

def _list_inits(statement: ast.stmt) -> list[str]:
    """The names a statement binds to a written-out list: `name = [...]`, or an item of an
    unpacking that can be split (`layers, d = [], 4`)."""
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.List)):
        return [statement.targets[0].id]
    return [name.id for name, value in _split_targets(statement) or [] if isinstance(value, ast.List)]


def _appended(statement: ast.stmt, name: str) -> ast.expr | None:
    """`e` of `name.append(e)`, when `e` does not read `name` itself."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == name
            and len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred)):
        return None
    return None if _mentions(call.args[0], name) else call.args[0]


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(node))


def _append_run(block: list[ast.stmt], index: int, name: str) -> list[int]:
    """Where the back-to-back `name.append(e)` statements after `block[index]` are, when nothing
    between the list and the first of them mentions `name`."""
    run = []
    for position in range(index + 1, len(block)):
        if _appended(block[position], name) is not None:
            run.append(position)
        elif run or _mentions(block[position], name):
            break
    return run


def _append_chains(tree: ast.AST) -> list[tuple[NodePath, str, int, str]]:
    found = []
    for path, field in statement_lists(tree):
        block = getattr(resolve(tree, path), field)
        found += [(path, field, index, name) for index, statement in enumerate(block)
                  for name in _list_inits(statement) if _append_run(block, index, name)]
    return found


def _fold_appends(path: NodePath, field: str, index: int, name: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        block = getattr(resolve(tree, path), field)
        if index >= len(block) or name not in _list_inits(block[index]):
            return False
        run = _append_run(block, index, name)
        pairs = _split_targets(block[index]) if isinstance(block[index].targets[0], (ast.Tuple, ast.List)) else None
        written = dict((n.id, value) for n, value in pairs)[name] if pairs else block[index].value
        elements = written.elts + [_appended(block[position], name) for position in run]
        block[run[0]:run[-1] + 1] = [ast.Assign([ast.Name(name, ast.Store())], ast.List(elements, ast.Load()), lineno=0)]
        block[index:index + 1] = [ast.Assign([ast.Name(n.id, ast.Store())], value, lineno=0)
                                  for n, value in pairs or [] if n.id != name]
        return True
    return edit


def _spread_literals(tree: ast.AST) -> bool:
    """`f(*[a, b])` -> `f(a, b)`, `[*(a,), b]` -> `[a, b]` (all of them; False when there is none)."""
    spread = False
    for node in ast.walk(tree):
        items = node.args if isinstance(node, ast.Call) else node.elts if (
            isinstance(node, (ast.List, ast.Tuple, ast.Set)) and isinstance(getattr(node, "ctx", ast.Load()), ast.Load)) else None
        if items and any(_spreadable(item) for item in items):
            items[:] = [element for item in items for element in (item.value.elts if _spreadable(item) else [item])]
            spread = True
    return spread


def _spreadable(item: ast.expr) -> bool:
    return isinstance(item, ast.Starred) and isinstance(item.value, (ast.List, ast.Tuple))


# -- unpacking a written-out tuple --------------------------------------------------------------------

def _split_targets(statement: ast.stmt) -> list[tuple[ast.Name, ast.expr]] | None:
    """(name, value) pairs of `a, b = (x, y)` when assigning them one after another means the same."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], (ast.Tuple, ast.List))
            and isinstance(statement.value, (ast.Tuple, ast.List))):
        return None
    names, values = statement.targets[0].elts, statement.value.elts
    if len(names) != len(values) or not all(isinstance(name, ast.Name) for name in names):
        return None
    for position, value in enumerate(values):
        # `users, pos = (users, users)`: binding a name to itself changes nothing a later item reads
        earlier = {name.id for name, bound in zip(names[:position], values) if not _is_name(bound, name.id)}
        if any(isinstance(node, (ast.Starred, ast.NamedExpr)) or (isinstance(node, ast.Name) and node.id in earlier)
               for node in ast.walk(value)):
            return None
    return list(zip(names, values))


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _unpackings(tree: ast.AST) -> list[tuple[NodePath, int]]:
    return [(path, index) for path, scope in _scope_bodies(tree) for index, statement in enumerate(scope.body)
            if _split_targets(statement) is not None]


def _split_unpacking(path: NodePath, index: int) -> Edit:
    def edit(tree: ast.AST) -> bool:
        scope = resolve(tree, path)
        pairs = _split_targets(scope.body[index]) if index < len(scope.body) else None
        if pairs is None:
            return False
        scope.body[index:index + 1] = [ast.Assign([ast.Name(name.id, ast.Store())], value, lineno=0)
                                       for name, value in pairs]
        for position in reversed(range(index, index + len(pairs))):
            _read_through(scope, position, constants=True)  # `mu, s = (x, 1)`: `x` and `1` read in place
        read = _reads(tree)[0]
        scope.body[index:index + len(pairs)] = [
            statement for statement in scope.body[index:index + len(pairs)] if not _does_nothing(statement, read)]
        if not scope.body:
            scope.body.append(ast.Pass())
        return True
    return edit


def _does_nothing(assignment: ast.Assign, read: set[str]) -> bool:
    """`a = a`, or what the dead-code pass would take (a name read nowhere, bound to a value that
    calls nothing): what splitting an unpacking leaves that can go with it, since a candidate must
    be smaller than the program it comes from."""
    value = assignment.value
    return (isinstance(value, ast.Name) and value.id == assignment.targets[0].id) or _unread_assignment(assignment, read)


# -- buffers ------------------------------------------------------------------------------------------

def _registered_buffer(statement: ast.stmt) -> ast.Assign | None:
    """`receiver.register_buffer("name", value[, persistent=...])` as `receiver.name = value`; None
    for anything else (a computed name, a `None` buffer, a keyword the attribute cannot carry)."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "register_buffer"
            and isinstance(call.func.value, ast.Name)):
        return None
    keywords = {k.arg: k.value for k in call.keywords}
    if None in keywords or set(keywords) - {"name", "tensor", "persistent"} or len(call.args) > 3:
        return None
    name = call.args[0] if call.args else keywords.get("name")
    value = call.args[1] if len(call.args) > 1 else keywords.get("tensor")
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()) or value is None:
        return None
    if isinstance(value, ast.Constant) and value.value is None:
        return None
    target = ast.Attribute(value=ast.Name(id=call.func.value.id, ctx=ast.Load()), attr=name.value, ctx=ast.Store())
    return ast.Assign(targets=[target], value=value, lineno=statement.lineno)


def _buffer_registrations(tree: ast.AST) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Expr) and _registered_buffer(node) is not None]


def _buffers_as_attributes(tree: ast.AST) -> bool:
    registrations = {id(statement) for statement in _buffer_registrations(tree)}
    if not registrations:
        return False
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                block[:] = [_registered_buffer(s) if id(s) in registrations else s for s in block]
    return True
