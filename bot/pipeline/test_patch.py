"""A generated test added to an existing PyTorch test file, as a unified diff (pure).

Shared by the local triage (`test.patch` with `--pytorch-root`) and the App's draft PR; it needs
no runner, so the App can use it without loading the execution side.
"""
from __future__ import annotations

import ast
import difflib
import logging

from bot.core.report import RegressionTest
from bot.pipeline.placement import main_test_class
from bot.pipeline.regress import CONFIG_MODULES

log = logging.getLogger(__name__)


def patch_adding(path: str, before: str, test: RegressionTest, test_class: str | None) -> str | None:
    """The unified diff that adds the test's method to the file at `path` (its text `before`); None,
    with a warning, when the file has no class to take it or does not parse."""
    try:
        after = add_method_to_file(before, test.method_source, test_class, required_imports(test))
    except (ValueError, SyntaxError) as exc:
        log.warning("could not add the test to %s: %s", path, exc)
        return None
    return unified_patch(path, before, after)


def add_method_to_file(file_source: str, method_source: str, class_name: str | None,
                       imports: tuple[str, ...] = ()) -> str:
    """`file_source` with the method appended to `class_name` (or its main test class) and `imports` ensured."""
    tree = ast.parse(file_source)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    target = next((c for c in classes if c.name == class_name), None)
    if target is None:  # the same choice the suggestion made
        target = next((c for c in classes if c.name == main_test_class(file_source)), None)
    if target is None:
        raise ValueError("the file has no test class to add the method to")
    lines = file_source.splitlines()
    insert_at = target.end_lineno
    new_lines = lines[:insert_at] + [""] + method_source.rstrip("\n").splitlines() + lines[insert_at:]
    return ensure_imports("\n".join(new_lines) + "\n", imports, tree)


def ensure_imports(source: str, imports: tuple[str, ...], tree: ast.Module | None = None) -> str:
    """Add `import x` lines the file lacks after its last top-level import (before any code)."""
    present = set(source.splitlines())
    missing = [line for line in imports if line not in present]
    if not missing:
        return source
    tree = tree or ast.parse(source)
    last_import = max((n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    lines = source.splitlines()
    return "\n".join(lines[:last_import] + missing + lines[last_import:]) + "\n"


def required_imports(test: RegressionTest) -> tuple[str, ...]:
    """Module-level imports the method relies on (decorators are evaluated at class level).
    Takes the freshly generated test (any object with `device` and `method_source`) or the one read
    back from report.json."""
    needed = ["import torch"]
    if test.device == "cuda":
        needed.append("import unittest")
    needed.extend(f"import {module}" for module in CONFIG_MODULES if f"@{module}.patch" in test.method_source)
    return tuple(needed)


def unified_patch(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


