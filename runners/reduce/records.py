"""The records pass: a dataclass (or NamedTuple) field that nothing reads goes, with the arguments
that fill it.

A report's output type often carries more than the failure needs: `Detections(boxes, scores,
labels)` returned from an exported `forward`, where the failure is that the type is not a pytree
node and one field would show it. The dead-code pass cannot drop such a field on its own, because
in a decorated class the fields are the constructor's parameters: without the argument going too,
every `Detections(...)` call raises a `TypeError` instead of the report's error. So one candidate
per field drops both at once, the field from the class body and its argument (by position or by
keyword) from every call; the values those arguments computed are then unread, and the dead-code
pass that follows progress takes them.

Only for a record every use of which is a plain call (no `*args`/`**kwargs`, nothing subclassing
or passing the class around), and only for a field no attribute read or string names anywhere
(`dets.boxes`, `getattr(d, "boxes")`): a read field is what the program uses, and dropping it
would only fail. The predicate still decides; a record whose fields are used by position
(`astuple`, unpacking a NamedTuple) is refused like any other edit.
"""
from __future__ import annotations

import ast
from typing import Iterator

from runners.reduce.base import Edit
from runners.reduce.dead import _reads
from runners.reduce.modules import _only_called

RECORD_DECORATORS = ("dataclass",)  # `@dataclass`, `@dataclass(...)`, `@dataclasses.dataclass`
RECORD_BASE = "NamedTuple"  # `class X(NamedTuple)`, `class X(typing.NamedTuple)`


def field_edits(tree: ast.AST) -> Iterator[tuple[str, Edit]]:
    """One candidate per unread field of each record whose every use is a plain call."""
    _, attributes = _reads(tree)
    for record in _records(tree):
        calls = _plain_calls(tree, record.name)
        if calls is None:
            continue
        for name in _field_names(record):
            if name not in attributes:
                yield "records", _drop_field(record.name, name)


def _records(tree: ast.AST) -> list[ast.ClassDef]:
    """Module-level dataclasses and NamedTuples with no base to inherit fields from."""
    return [node for node in getattr(tree, "body", []) if isinstance(node, ast.ClassDef) and _is_record(node)]


def _is_record(cls: ast.ClassDef) -> bool:
    decorated = any(_last_name(_without_arguments(decorator)) in RECORD_DECORATORS for decorator in cls.decorator_list)
    bases = [_last_name(base) for base in cls.bases]
    if decorated:
        return not bases and not cls.keywords
    return bases == [RECORD_BASE] and not cls.decorator_list and not cls.keywords


def _without_arguments(node: ast.expr) -> ast.expr:
    """`dataclass(frozen=True)` -> `dataclass`: the decorator's name, arguments or not."""
    return node.func if isinstance(node, ast.Call) else node


def _last_name(node: ast.expr) -> str | None:
    """`dataclass` for `dataclass` and `dataclasses.dataclass`."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _field_names(record: ast.ClassDef) -> list[str]:
    """The fields in order: the class body's annotated names (`ClassVar`s are not fields)."""
    return [statement.target.id for statement in record.body
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and "ClassVar" not in ast.unparse(statement.annotation)]


def _plain_calls(tree: ast.AST, name: str) -> list[ast.Call] | None:
    """Every `Name(...)` call, when each use of the name is one (`_only_called`) and none spreads
    `*`/`**` arguments."""
    calls = _only_called(tree, name)
    spread = any(isinstance(a, ast.Starred) for call in calls for a in call.args) or any(
        keyword.arg is None for call in calls for keyword in call.keywords)
    return calls if calls and not spread else None


def _drop_field(record_name: str, field: str) -> Edit:
    def edit(tree: ast.AST) -> bool:
        record = next((r for r in _records(tree) if r.name == record_name), None)
        calls = _plain_calls(tree, record_name) if record is not None else None
        if calls is None or field not in _field_names(record):
            return False
        index = _field_names(record).index(field)
        record.body = [s for s in record.body if not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                                                      and s.target.id == field)] or [ast.Pass()]
        for call in calls:
            if index < len(call.args):
                del call.args[index]
            call.keywords = [keyword for keyword in call.keywords if keyword.arg != field]
        return True
    return edit
