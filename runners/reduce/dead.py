"""The dead-code pass: what nothing reads, deleted in one candidate.

Deleting statements one chunk at a time finds dead code too, but pays a run for each piece that
sits between live statements; a repro taken from a real project carries many such pieces (unused
imports, a config class's unread fields, submodules `__init__` builds that `forward` never calls).
One candidate removes them all; if that loses the failure (an import with a side effect, say),
narrower candidates follow, and the statement pass still has its turn.

Unread assignments count as dead only when their value calls nothing (`b, t, d = x.shape`,
`start = 0.0`): what is left of a line once the fine passes took its readers. Such a line can
also block a bigger edit: on the 93-line graph-break report, `b, t, d = x.shape` in the attention
block made swapping the encoder for that block fail (its input was 2-D) for a round and 74 runs,
until the statement pass came to it. An assignment whose value calls something (`out = model(x)`)
is often the failing call itself, and stays for the statement pass.

Statements that do nothing go too: a bare name or constant on its own line (`model`, `0`, what a
deleted call left behind), a `pass` beside other statements, and an `__init__` that only calls
`super().__init__()`. A budget-bound search otherwise ends with them (the recompile_limit case
kept `model` alone on a line and an empty `__init__`), each worth a statement-pass run.
"""
from __future__ import annotations

import ast
from typing import Iterator

from runners.reduce.base import Edit

KINDS_ALL = ("import", "definition", "attribute", "field", "assignment", "inert")


def dead_code_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Everything unread at once; then unread imports and definitions; then unread attributes and
    fields; then unread assignments of values that call nothing, and statements that do nothing."""
    for kinds in (KINDS_ALL, ("import", "definition"), ("attribute", "field"), ("assignment", "inert")):
        yield "dead", _delete_unread(kinds)


def _delete_unread(kinds: tuple[str, ...]) -> Edit:
    def edit(tree: ast.AST) -> bool:
        names, attributes = _reads(tree)
        removed = False
        if "import" in kinds or "definition" in kinds:
            removed |= _drop_module_level(tree, names, kinds)
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            if "field" in kinds and not cls.decorator_list:  # a decorated class (dataclass) makes fields parameters
                removed |= _drop_fields(cls, names | attributes)
            if "attribute" in kinds:
                removed |= _drop_self_attributes(cls, attributes)
        if "assignment" in kinds:
            while _drop_unread_assignments(tree, _reads(tree)[0]):  # `scale = d ** -0.5` read `d`
                removed = True
        if "inert" in kinds:
            removed |= _drop_inert(tree)
        return removed
    return edit


def _drop_inert(tree: ast.AST) -> bool:
    """Statements that do nothing, in every block: a bare name or constant, a `pass` among other
    statements, an `__init__(self)` that only calls `super().__init__()`."""
    removed = False
    for node, block in _blocks(tree):
        kept = [s for s in block if not (_inert(s) or isinstance(node, ast.ClassDef) and _bare_init(s))]
        kept = [s for s in kept if not isinstance(s, ast.Pass)] or kept[:1]
        if len(kept) != len(block):
            removed = True
            block[:] = kept or [ast.Pass()]
    return removed


def _blocks(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.stmt]]]:
    """(node, one of its statement lists) for every block in the tree: bodies, `else`s, `finally`s."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, block


def _inert(statement: ast.stmt) -> bool:
    """A bare name or constant as a statement (`...`, the placeholder body, stays), `h = h`, or a loop whose
    body never runs: `for q in []:` once the search emptied what it walks (the AOTI report's
    serving loop ended as `for query in []: q = embed()`), `while False:`."""
    if isinstance(statement, (ast.For, ast.While)):
        return not statement.orelse and _never_loops(statement)
    if _self_assignment(statement):
        return True
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    return isinstance(value, ast.Name) or isinstance(value, ast.Constant) and value.value is not Ellipsis


def _self_assignment(statement: ast.stmt) -> bool:
    """`h = h`: what is left of `h = self.norm(h)` once the layer went. (Inside a function where `h`
    is not yet bound it raises, so the candidate's run decides, as for every dead-code edit.)"""
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Name)
            and statement.targets[0].id == statement.value.id)


# builtins whose result is empty when their (first) argument is: `enumerate([])`, `list(())`
EMPTY_WHEN_ARGUMENT_IS = frozenset({"enumerate", "reversed", "iter", "list", "tuple", "sorted", "set"})
# containers that are empty when made with no arguments: `list()`, `nn.ModuleList()`
EMPTY_WITHOUT_ARGUMENTS = frozenset({"list", "tuple", "dict", "set", "frozenset", "str", "bytes", "ModuleList",
                                     "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})


def _never_loops(loop: ast.For | ast.While) -> bool:
    """A `for` over something empty, or a `while` on a false constant."""
    if isinstance(loop, ast.While):
        return isinstance(loop.test, ast.Constant) and not loop.test.value
    return _empty(loop.iter)


def _empty(walked: ast.expr) -> bool:
    """An empty literal (`[]`, `()`, `{}`, `""`), a container made with no arguments (`list()`,
    `nn.ModuleList()`), `zip()` or a `zip` of something empty (fresh_issues_8's `for block, in zip():`
    once the search emptied the blocks, then `in nn.ModuleList():`), `range(0)`, or a builtin that
    passes an empty argument on (`enumerate([])`)."""
    if isinstance(walked, (ast.List, ast.Tuple, ast.Set)):
        return not walked.elts
    if isinstance(walked, ast.Dict):
        return not walked.keys
    if isinstance(walked, ast.Constant):
        return walked.value in ("", b"")
    if not (isinstance(walked, ast.Call) and isinstance(walked.func, (ast.Name, ast.Attribute)) and not walked.keywords):
        return False
    name, args = walked.func.id if isinstance(walked.func, ast.Name) else walked.func.attr, walked.args
    if not args:
        return name in EMPTY_WITHOUT_ARGUMENTS or name == "zip"
    if isinstance(walked.func, ast.Attribute):
        return False
    if name == "zip":
        return any(_empty(arg) for arg in args if not isinstance(arg, ast.Starred))
    if name == "range":
        return len(args) == 1 and isinstance(args[0], ast.Constant) and args[0].value == 0
    return name in EMPTY_WHEN_ARGUMENT_IS and len(args) == 1 and _empty(args[0])


def _bare_init(statement: ast.stmt) -> bool:
    """`def __init__(self): super().__init__()` (a docstring or `pass` beside it): what the class
    inherits anyway."""
    if not (isinstance(statement, ast.FunctionDef) and statement.name == "__init__" and not statement.decorator_list):
        return False
    arguments = statement.args
    if len(arguments.args) != 1 or arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return False
    body = [s for s in statement.body if not (_inert(s) or isinstance(s, ast.Pass))]
    return len(body) == 1 and ast.unparse(body[0]) == "super().__init__()"


def _reads(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names read anywhere, attribute names read anywhere, `getattr` strings included)."""
    names, attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            attributes.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            attributes.add(node.value)  # getattr(self, "name"), __all__ entries
    return names, attributes


def _drop_module_level(tree: ast.AST, names: set[str], kinds: tuple[str, ...]) -> bool:
    removed, kept = False, []
    for node in getattr(tree, "body", []):
        if "import" in kinds and isinstance(node, (ast.Import, ast.ImportFrom)) and _unread_import(node, names):
            removed = True
            if node.names:
                kept.append(node)
            continue
        if "definition" in kinds and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name not in names:
            removed = True
            continue
        kept.append(node)
    tree.body[:] = kept
    return removed


def _unread_import(node: ast.Import | ast.ImportFrom, names: set[str]) -> bool:
    """Drop the aliases nothing reads (in place); True when any went. `from __future__` stays."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return False
    bound = [(alias, (alias.asname or alias.name).split(".")[0]) for alias in node.names]
    read = [alias for alias, name in bound if name in names or name == "*"]
    if len(read) == len(node.names):
        return False
    node.names[:] = read
    return True


def _drop_fields(cls: ast.ClassDef, read: set[str]) -> bool:
    """Class-level `name = value` / `name: type = value` that nothing reads."""
    kept = [s for s in cls.body if not (_field_name(s) and _field_name(s) not in read)]
    removed = len(kept) != len(cls.body)
    cls.body[:] = kept or [ast.Pass()]
    return removed


def _field_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        name = statement.targets[0].id
    else:
        return None
    return None if name.startswith("__") else name


def _drop_self_attributes(cls: ast.ClassDef, read: set[str]) -> bool:
    """`self.name = value` in the class's methods, where nothing anywhere reads `.name`."""
    removed = False
    for method in (s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))):
        kept = [s for s in method.body if not (_self_attribute(s) and _self_attribute(s) not in read)]
        if len(kept) != len(method.body):
            removed = True
            method.body[:] = kept or [ast.Pass()]
    return removed


def _self_attribute(statement: ast.stmt) -> str | None:
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AnnAssign) else []
    if len(targets) == 1 and isinstance(targets[0], ast.Attribute) and isinstance(targets[0].value, ast.Name) \
            and targets[0].value.id == "self":
        return targets[0].attr
    return None


def _drop_unread_assignments(tree: ast.AST, read: set[str]) -> bool:
    """`a = value` and `a, b = value` in any block (class bodies aside: those are fields), where no
    target name is read anywhere and the value calls nothing."""
    removed = False
    for node, block in _blocks(tree):
        if isinstance(node, ast.ClassDef):
            continue
        kept = [s for s in block if not _unread_assignment(s, read)]
        if len(kept) != len(block):
            removed = True
            block[:] = kept or [ast.Pass()]
    return removed


def _unread_assignment(statement: ast.stmt, read: set[str]) -> bool:
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return False
    names = [n for t in targets for n in target_names(t)]
    return (bool(names) and None not in names and not any(n in read or n.startswith("__") for n in names)
            and not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr))
                        for n in ast.walk(value)))


def target_names(target: ast.expr) -> list[str | None]:
    """The names a target binds; None for a part that is not a plain name (`self.x`, `d[k]`, `*rest`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in target_names(element)]
    return [None]


def without_dead_code(source: str) -> str:
    """`source` with everything unread deleted (the all-at-once candidate), as text; `source`
    itself when it does not parse or nothing is dead."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    _, edit = next(dead_code_edits(tree))
    return ast.unparse(tree) + "\n" if edit(tree) else source
