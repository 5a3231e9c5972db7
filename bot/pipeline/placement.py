"""Which PyTorch test file a regression test belongs in, and why.

The category gives the candidates (`categories.yaml: test_files`); `rules/test_files.yaml` refines
them by what the failure touches: where it was raised, what the repro uses, which device it needs.
With a PyTorch checkout, files that do not exist drop out, the `TestCase` class to extend is read
from the file, and a file whose tests already use the repro's ops wins a close call.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import re2

from bot.core.report import TestSuggestion
from bot.core.ruleset import Category
from bot.core.tables import FORBIDDEN_TEST_FILES, Refinement

# Identifiers that say little about a test's topic: every PT2 test file is full of them.
COMMON_NAMES = frozenset({"torch", "compile", "randn", "rand", "ones", "zeros", "nn", "Module", "forward", "self",
                          "super", "__init__", "print", "range", "tensor", "x", "y", "fn", "f", "model", "backend",
                          "inductor", "eager", "fullgraph", "Tensor", "float32", "device", "cpu", "cuda", "shape"})
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass(frozen=True)
class CheckoutFile:
    """What a test file in a PyTorch checkout holds that matters for the choice."""

    path: str
    test_class: str | None  # the class most of its tests live in
    identifiers: Counter


@dataclass(frozen=True)
class FailureTouches:
    """What the failure touches, read from the run and the repro."""

    frames: tuple[str, ...] = ()  # source paths of the final error's frames
    code: str = ""  # the (minimized) repro
    device: str = "cpu"


def matches(rule: Refinement, category_id: str, touches: FailureTouches) -> bool:
    """`categories` and `device` must hold, and `frame` or `code` must match (either one, when a rule
    gives both: a custom autograd.Function shows in the frames or in the code, whichever we have)."""
    if rule.categories and category_id not in rule.categories:
        return False
    if rule.device and rule.device != touches.device:
        return False
    found = []
    if rule.frame:
        found.append(any(re2.search(rule.frame, path) for path in touches.frames))
    if rule.code:
        found.append(bool(re2.search(rule.code, touches.code)))
    return any(found) if found else True


def suggest_test_file(category: Category, touches: FailureTouches, rules: Iterable[Refinement],
                      never: Iterable[str] = FORBIDDEN_TEST_FILES,
                      checkout: Mapping[str, CheckoutFile] | None = None) -> TestSuggestion | None:
    """The best file for the test, a reason a maintainer can check, and the runners-up."""
    if not category.regression_test:
        return None
    excluded = set(never)
    scores: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    for rank, path in enumerate(category.test_files):
        if path not in excluded:
            scores[path] = max(3 - rank, 0.5)
            reasons.setdefault(path, [])
    for rule in rules:
        if rule.file not in excluded and matches(rule, category.id, touches):
            scores[rule.file] = scores.get(rule.file, 0) + rule.weight
            reasons.setdefault(rule.file, []).append(rule.reason)
    if checkout is not None:
        _weigh_checkout(scores, reasons, touches.code, checkout)
    if not scores:
        return None
    order = list(scores)  # ties keep the category's order, then rule order
    ranked = sorted(scores, key=lambda p: (-scores[p], order.index(p)))
    best = ranked[0]
    reason = reasons[best][0] if reasons[best] else f"the usual home of {category.title.lower()} repros"
    found = checkout.get(best) if checkout else None
    return TestSuggestion(path=best, reason=reason, test_class=found.test_class if found else None,
                          confirmed=found is not None, alternatives=tuple(ranked[1:4]))


def _weigh_checkout(scores: dict[str, float], reasons: dict[str, list[str]], code: str,
                    checkout: Mapping[str, CheckoutFile]) -> None:
    """Drop files the checkout lacks; add up to 2 points for tests that already use the repro's names."""
    for path in [p for p in scores if p not in checkout]:
        del scores[path]
    wanted = repro_identifiers(code)
    if not wanted:
        return
    overlaps = {path: sum(1 for name in wanted if checkout[path].identifiers.get(name)) for path in scores}
    top = max(overlaps.values(), default=0)
    for path, overlap in overlaps.items():
        if top and overlap:
            scores[path] += 2 * overlap / top
            if overlap == top:
                shared = sorted(name for name in wanted if checkout[path].identifiers.get(name))[:4]
                reasons[path].append(f"its existing tests already use {', '.join(shared)}")


def repro_identifiers(code: str) -> set[str]:
    """The distinctive names a repro uses (ops, modules, methods), for matching against test files."""
    return {name for name in IDENTIFIER.findall(code) if name not in COMMON_NAMES and not name.startswith("__")}


def read_checkout(root: Path, paths: Iterable[str]) -> dict[str, CheckoutFile]:
    """The candidate files that exist under a PyTorch checkout, parsed. (The one function here that reads files.)"""
    found = {}
    for path in dict.fromkeys(paths):
        file = root / path
        if file.is_file():
            found[path] = checkout_file(path, file.read_text(encoding="utf-8", errors="replace"))
    return found


def checkout_file(path: str, source: str) -> CheckoutFile:
    return CheckoutFile(path=path, test_class=main_test_class(source), identifiers=Counter(IDENTIFIER.findall(source)))


def main_test_class(source: str) -> str | None:
    """The class most of a file's tests live in: a TestCase subclass, or a `*Template` mixin (AOTI, Inductor)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    counts = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _is_test_class(node):
            counts[node.name] = sum(1 for item in node.body
                                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"))
    return max(counts, key=lambda name: counts[name], default=None) if counts else None


def _is_test_class(node: ast.ClassDef) -> bool:
    bases = [ast.unparse(base) for base in node.bases]
    return any(base.endswith("TestCase") for base in bases) or node.name.endswith(("Template", "Tests", "Test"))


def frames_of(chain) -> tuple[str, ...]:
    """Source paths of an exception chain's frames, normalized to `torch/...` where they are torch's."""
    paths = []
    for frame in chain.frames if chain else ():
        path = frame.path.replace("\\", "/")
        index = path.rfind("/torch/")
        paths.append(path[index + 1:] if index >= 0 else path)
    return tuple(paths)
