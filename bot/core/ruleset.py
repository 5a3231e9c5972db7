"""Load and validate the triage table (`bot/rules/*.yaml`).

A rules file is data a maintainer edits, so every mistake gets a one-line error that names the
entry and the field, raised at load time rather than as a surprise mid-triage.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import re2
import yaml

CATEGORY_IDS = (
    "graph_break",
    "backend_compiler_failed",
    "recompilation",
    "accuracy",
    "dynamo_internal_error",
    "runtime_crash",
    "triton_kernel_bug",
    "export_failure",
    "aoti_failure",
    "aot_autograd_failure",
    "dynamic_shapes",
    "performance",
    "not_pt2",
    "unknown",
)
SCOPES = ("exception", "message", "origin", "frames", "line", "code")
DECISIVE_SCOPES = ("exception", "message", "origin", "frames")  # the final error, not any line of a log
FACTS = ("pt2_context", "pt2_code", "pt2_frames", "no_pt2_frames", "exception", "no_exception")
FORBIDDEN_TEST_FILES = ("test/dynamo/test_misc.py",)
ARTIFACT_KINDS = ("trace", "compile_debug", "minifier")


class RulesError(ValueError):
    """A rules file is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Diagnostics:
    env: Mapping[str, str]
    note: str


@dataclass(frozen=True)
class Category:
    id: str
    title: str
    summary: str
    diagnostics: Diagnostics
    key_files: tuple[str, ...]
    next_steps: tuple[str, ...]
    test_files: tuple[str, ...]
    labels: tuple[str, ...]
    artifacts: tuple[str, ...] = ()
    minifier_level: int | None = None
    eager_clean: bool = False  # the repro runs clean with the compiler off; minimizing must keep that


@dataclass(frozen=True)
class Pattern:
    name: str
    category: str
    priority: int
    scope: str
    regex: str
    requires: tuple[str, ...]
    confidence: float
    order: int  # position in the file: breaks priority ties
    # A decisive match on the final error decides alone; any other match is evidence the text model
    # weighs (default: decisive when it reads the final error, not when it reads any log line or code).
    decisive: bool = False


@dataclass(frozen=True)
class ContextRule:
    """When the verdict is one of `when` and the report's code shows `feature`, the verdict is
    `category`: the entry point the user called owns the failure (an Unsupported inside
    torch.export is an export failure)."""

    when: tuple[str, ...]
    feature: str
    category: str


@dataclass(frozen=True)
class Ruleset:
    categories: Mapping[str, Category]
    patterns: tuple[Pattern, ...]  # sorted: highest priority first, then file order
    context: tuple[ContextRule, ...] = ()

    def in_scope(self, scope: str) -> tuple[Pattern, ...]:
        return tuple(p for p in self.patterns if p.scope == scope)


def _require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise RulesError(f"{where}: {message}")


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    _require(isinstance(value, list) and all(isinstance(v, str) for v in value), where, "must be a list of strings")
    return tuple(value)


def _bool(value: Any, where: str) -> bool:
    _require(isinstance(value, bool), where, "must be true or false")
    return value


def parse_category(cat_id: str, raw: Any, where: str) -> Category:
    where = f"{where}: category {cat_id!r}"
    _require(cat_id in CATEGORY_IDS, where, f"unknown category id (known: {', '.join(CATEGORY_IDS)})")
    _require(isinstance(raw, dict), where, "must be a mapping")
    for key in ("title", "summary", "diagnostics", "key_files", "next_steps", "test_files", "labels"):
        _require(key in raw, where, f"missing field {key!r}")
    diag = raw["diagnostics"]
    _require(isinstance(diag, dict) and isinstance(diag.get("env", {}), dict), f"{where}.diagnostics", "needs an `env` mapping")
    env = {str(k): str(v) for k, v in (diag.get("env") or {}).items()}
    test_files = _str_list(raw["test_files"], f"{where}.test_files")
    for bad in FORBIDDEN_TEST_FILES:
        _require(bad not in test_files, f"{where}.test_files", f"{bad} is oversized; name a topic-specific file")
    artifacts = _str_list(raw.get("artifacts", []), f"{where}.artifacts")
    for kind in artifacts:
        _require(kind in ARTIFACT_KINDS, f"{where}.artifacts", f"unknown artifact {kind!r} (known: {', '.join(ARTIFACT_KINDS)})")
    minifier_level = raw.get("minifier_level")
    _require(("minifier" in artifacts) == (minifier_level in (2, 4)), where,
             "`minifier` in artifacts needs minifier_level 2 (compile errors) or 4 (accuracy), and only then")
    return Category(
        id=cat_id,
        title=str(raw["title"]),
        summary=str(raw["summary"]),
        diagnostics=Diagnostics(env=env, note=str(diag.get("note", ""))),
        key_files=_str_list(raw["key_files"], f"{where}.key_files"),
        next_steps=_str_list(raw["next_steps"], f"{where}.next_steps"),
        test_files=test_files,
        labels=_str_list(raw["labels"], f"{where}.labels"),
        artifacts=artifacts,
        minifier_level=minifier_level,
        eager_clean=_bool(raw.get("eager_clean", False), f"{where}.eager_clean"),
    )


def parse_pattern(raw: Any, order: int, where: str, categories: Mapping[str, Category]) -> Pattern:
    _require(isinstance(raw, dict), f"{where}: pattern #{order + 1}", "must be a mapping")
    name = raw.get("name")
    where = f"{where}: pattern {name!r}" if name else f"{where}: pattern #{order + 1}"
    for key in ("name", "category", "priority", "in", "regex"):
        _require(key in raw, where, f"missing field {key!r}")
    _require(raw["category"] in categories, where, f"category {raw['category']!r} is not defined in categories.yaml")
    _require(isinstance(raw["priority"], int) and 0 <= raw["priority"] <= 100, where, "priority must be an integer 0-100")
    _require(raw["in"] in SCOPES, where, f"`in` must be one of {', '.join(SCOPES)}")
    requires = _str_list(raw.get("requires", []), f"{where}.requires")
    for fact in requires:
        _require(fact in FACTS, where, f"unknown fact {fact!r} in requires (known: {', '.join(FACTS)})")
    confidence = raw.get("confidence", 0.7)
    _require(isinstance(confidence, (int, float)) and 0 < confidence <= 1, where, "confidence must be in (0, 1]")
    decisive = raw.get("decisive", raw["in"] in DECISIVE_SCOPES)
    _require(isinstance(decisive, bool), where, "decisive must be true or false")
    try:
        re2.compile(raw["regex"])
    except re2.error as exc:
        raise RulesError(f"{where}: regex does not compile under RE2: {exc}") from None
    return Pattern(
        name=str(name),
        category=raw["category"],
        priority=raw["priority"],
        scope=raw["in"],
        regex=raw["regex"],
        requires=requires,
        confidence=float(confidence),
        order=order,
        decisive=decisive,
    )


def parse_ruleset(categories_doc: Any, patterns_doc: Any, *, where: str = "rules") -> Ruleset:
    """Build a Ruleset from the two parsed YAML documents (pure: no file access)."""
    _require(isinstance(categories_doc, dict) and isinstance(categories_doc.get("categories"), dict),
             f"{where}/categories.yaml", "needs a top-level `categories` mapping")
    categories = {cid: parse_category(cid, raw, f"{where}/categories.yaml")
                  for cid, raw in categories_doc["categories"].items()}
    missing = [cid for cid in CATEGORY_IDS if cid not in categories]
    _require(not missing, f"{where}/categories.yaml", f"missing categories: {', '.join(missing)}")
    _require(isinstance(patterns_doc, dict) and isinstance(patterns_doc.get("patterns"), list),
             f"{where}/patterns.yaml", "needs a top-level `patterns` list")
    patterns = [parse_pattern(raw, i, f"{where}/patterns.yaml", categories)
                for i, raw in enumerate(patterns_doc["patterns"])]
    names = [p.name for p in patterns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    _require(not dupes, f"{where}/patterns.yaml", f"duplicate pattern names: {', '.join(dupes)}")
    ranked = tuple(sorted(patterns, key=lambda p: (-p.priority, p.order)))
    context = tuple(parse_context_rule(raw, i, f"{where}/patterns.yaml", categories)
                    for i, raw in enumerate(patterns_doc.get("context") or []))
    return Ruleset(categories=categories, patterns=ranked, context=context)


def parse_context_rule(raw: Any, order: int, where: str, categories: Mapping[str, Category]) -> ContextRule:
    where = f"{where}: context rule #{order + 1}"
    _require(isinstance(raw, dict), where, "must be a mapping")
    when = _str_list(raw.get("when"), f"{where}.when")
    for category in when + (raw.get("category"),):
        _require(category in categories, where, f"category {category!r} is not defined in categories.yaml")
    _require(isinstance(raw.get("feature"), str) and ":" in raw["feature"], where, "needs a feature name like entry:export")
    return ContextRule(when=when, feature=raw["feature"], category=raw["category"])


# libyaml's loader parses the rules ~20x faster than the pure-Python one (0.2 s of every CLI start).
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path: Path | Any, label: str) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise RulesError(f"{label}: not valid YAML: {exc}") from None


def load_ruleset(rules_dir: str | Path | None = None) -> Ruleset:
    """Load the bundled rules, or those in `rules_dir` (same two file names)."""
    base = Path(rules_dir) if rules_dir else resources.files("bot.rules")
    label = str(rules_dir) if rules_dir else "bot/rules"
    categories_doc = _load_yaml(base / "categories.yaml", f"{label}/categories.yaml")
    patterns_doc = _load_yaml(base / "patterns.yaml", f"{label}/patterns.yaml")
    return parse_ruleset(categories_doc, patterns_doc, where=label)
