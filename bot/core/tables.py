"""The rule tables besides categories and patterns, parsed and cross-checked against the categories.

Each table is data a maintainer edits (bot/rules/*.yaml); a mistake is a one-line RulesError that
names the file and the entry. The Ruleset (ruleset.py) loads each table once, on first use, through
the parsers here, so every table is checked against the same categories:

  features.yaml      what a report's code and prose show (bot/core/features.py reads the rules)
  regression.yaml    how a category's regression test asserts
  test_files.yaml    where in PyTorch a regression test goes, refined by what the failure touches
  excerpts.yaml      which log lines a comment shows per category
  reproduction.yaml  silent-failure thresholds and why a repro did not reproduce
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

import re2

ASSERTIONS = ("no_error", "matches_eager")
BASES = ("torch._dynamo.test_case", "torch._inductor.test_case", "torch.testing._internal.common_utils")
FORBIDDEN_TEST_FILES = ("test/dynamo/test_misc.py",)
JUDGES = ("compare", "timing", "recompiles", "graph_breaks")


class RulesError(ValueError):
    """A rules file is malformed; the message names the file, the entry and the field."""


def require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise RulesError(f"{where}: {message}")


# --- features.yaml ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FeatureRule:
    name: str
    regex: re.Pattern
    prose: bool  # also looked for outside code (phrases people write), not only in code
    unless: re.Pattern | None = None  # a prose line that also matches this does not count
    also: re.Pattern | None = None  # the whole text must also match this somewhere

    def in_prose(self, prose: str) -> bool:
        if self.unless is None:
            return bool(self.regex.search(prose))
        return any(not self.unless.search(prose, _line_start(prose, m.start()), _line_end(prose, m.end()))
                   for m in self.regex.finditer(prose))


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def parse_features(doc: Any, where: str) -> tuple[FeatureRule, ...]:
    require(isinstance(doc, dict) and isinstance(doc.get("features"), list), where, "needs a `features` list")
    rules = []
    for index, entry in enumerate(doc["features"]):
        label = f"{where}: features[{index}] ({entry.get('name', '?') if isinstance(entry, dict) else '?'})"
        require(isinstance(entry, dict) and isinstance(entry.get("name"), str) and ":" in entry["name"]
                and isinstance(entry.get("regex"), str), label, "needs a `name` like entry:export and a `regex`")
        flags = re.I if entry.get("ignore_case") else 0
        try:
            rules.append(FeatureRule(entry["name"], re.compile(entry["regex"], flags | re.M), bool(entry.get("prose")),
                                     re.compile(entry["unless"], flags) if entry.get("unless") else None,
                                     re.compile(entry["also"], flags | re.M) if entry.get("also") else None))
        except re.error as exc:
            raise RulesError(f"{label}: not a valid regex: {exc}") from None
    return tuple(rules)


# --- regression.yaml ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TestPlan:
    """How a category's regression test asserts correct behaviour."""

    __test__ = False  # not a pytest class, despite the name

    assertion: str
    base: str
    name: str
    op: bool = True  # prefix the name with the repro's first distinctive call


def parse_regression(doc: Any, categories: Mapping, where: str) -> dict[str, TestPlan]:
    plans = {}
    for category_id, raw in (doc or {}).get("categories", {}).items():
        label = f"{where}: {category_id}"
        require(category_id in categories, label, "unknown category")
        require(categories[category_id].regression_test, label, "the category says `regression_test: false`")
        require(isinstance(raw, dict) and raw.get("assertion") in ASSERTIONS and raw.get("base") in BASES
                and bool(raw.get("name")), label, f"needs assertion in {ASSERTIONS}, base in {BASES} and a name")
        plans[category_id] = TestPlan(raw["assertion"], raw["base"], raw["name"], bool(raw.get("op", True)))
    return plans


# --- test_files.yaml ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Refinement:
    name: str
    file: str
    weight: int
    reason: str
    frame: str | None = None
    code: str | None = None
    device: str | None = None
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestFileRules:
    __test__ = False

    rules: tuple[Refinement, ...]
    never: tuple[str, ...]  # files never suggested (oversized)


def parse_test_files(doc: Any, categories: Mapping, where: str) -> TestFileRules:
    doc = doc or {}
    never = tuple(doc.get("never", ())) + FORBIDDEN_TEST_FILES
    rules = tuple(_refinement(raw, index, where, never, categories) for index, raw in enumerate(doc.get("rules", ())))
    return TestFileRules(rules, never)


def _refinement(raw: Any, index: int, where: str, never: tuple[str, ...], categories: Mapping) -> Refinement:
    label = f"{where}: rules[{index}] ({raw.get('name', '?') if isinstance(raw, dict) else '?'})"
    require(isinstance(raw, dict) and all(isinstance(raw.get(k), str) for k in ("name", "file", "reason")), label,
            "needs string `name`, `file` and `reason`")
    require(any(raw.get(k) for k in ("frame", "code", "device")), label, "needs at least one of `frame`, `code`, `device`")
    require(raw["file"] not in never, label, f"{raw['file']} is on the never-suggest list")
    unknown = set(raw.get("categories", ())) - set(categories)
    require(not unknown, label, f"unknown categories {sorted(unknown)}")
    for key in ("frame", "code"):
        if raw.get(key):
            try:
                re2.compile(raw[key])
            except re2.error as exc:
                raise RulesError(f"{label}: `{key}` is not a valid RE2 pattern: {exc}") from None
    return Refinement(name=raw["name"], file=raw["file"], weight=int(raw.get("weight", 1)), reason=raw["reason"],
                      frame=raw.get("frame"), code=raw.get("code"), device=raw.get("device"),
                      categories=tuple(raw.get("categories", ())))


# --- excerpts.yaml ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExcerptRules:
    context: int
    max_lines: int
    patterns: Mapping[str, tuple[str, ...]]


def parse_excerpts(doc: Any, categories: Mapping, where: str) -> ExcerptRules:
    doc = doc or {}
    patterns = {cid: tuple(p) for cid, p in doc.get("categories", {}).items()}
    for cid, regexes in patterns.items():
        require(cid in categories, f"{where}: {cid}", "unknown category")
        for regex in regexes:
            try:
                re2.compile(regex)
            except re2.error as exc:
                raise RulesError(f"{where}: {cid}: not a valid RE2 pattern {regex!r}: {exc}") from None
    return ExcerptRules(int(doc.get("context", 2)), int(doc.get("max_lines", 60)), patterns)


# --- reproduction.yaml --------------------------------------------------------------------------

def parse_reproduction(doc: Any, categories: Mapping, where: str) -> Mapping:
    """The table as plain data (bot/core/outcome.py reads it), checked: every differential category
    has a judge with thresholds, and every not-reproduced rule has its fields and a valid regex."""
    require(isinstance(doc, dict), where, "must be a mapping")
    for name in ("silent", "not_reproduced", "obvious_imports", "compiled_only"):
        require(name in doc, where, f"missing `{name}`")
    for category in [doc["compiled_only"].get("category"), *doc["compiled_only"].get("text_categories", ()),
                     *(doc["compiled_only"].get("entry_categories") or {}).values()]:
        require(category in categories, f"{where}: compiled_only", f"unknown category {category!r}")
    for judge in JUDGES:
        require(isinstance(doc["silent"].get(judge), dict), f"{where}: silent", f"needs thresholds for judge {judge!r}")
    for category in categories.values():
        if category.differential:
            require(category.differential.judge in JUDGES, f"{where}: {category.id}",
                    f"differential judge must be one of {', '.join(JUDGES)}")
    for index, pattern in enumerate(doc["silent"]["graph_breaks"].get("deliberate", ())):
        require_regex(pattern, f"{where}: silent.graph_breaks.deliberate[{index}]")
    for index, rule in enumerate(doc["not_reproduced"]):
        label = f"{where}: not_reproduced[{index}]"
        require(isinstance(rule, dict) and {"reason", "exception", "message", "sentence"} <= set(rule), label,
                "needs reason, exception, message and sentence")
        compiled = require_regex(rule["message"], f"{label}: `message`")
        require(not rule.get("blocks") or "name" in compiled.groupindex, label,
                "a `blocks` rule must capture the missing `name` (checked against the script)")
    return doc


def require_regex(pattern: Any, label: str) -> re.Pattern:
    """`pattern` compiled, or a one-line RulesError naming where it came from."""
    try:
        return re.compile(pattern)
    except (re.error, TypeError) as exc:
        raise RulesError(f"{label} is not a valid regex: {exc}") from None
