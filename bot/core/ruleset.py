"""Load and validate the triage table (`bot/rules/*.yaml`).

A rules file is data a maintainer edits, so every mistake gets a one-line error that names the
entry and the field, raised at load time rather than as a surprise mid-triage.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import re2
import yaml

from bot.core.disposition import DispositionTable, parse_dispositions
from bot.core.ladder import LadderTable, parse_ladder
from bot.core.tables import (FORBIDDEN_TEST_FILES, ExcerptRules, FeatureRule, RulesError, TestFileRules, TestPlan,
                             parse_excerpts, parse_features, parse_regression, parse_reproduction, parse_test_files)

CATEGORY_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SCOPES = ("exception", "message", "origin", "raise_site", "frames", "line", "code")
DECISIVE_SCOPES = ("exception", "message", "origin", "raise_site", "frames")  # the final error, not any line of a log
FACTS = ("pt2_context", "pt2_code", "pt2_frames", "no_pt2_frames", "exception", "no_exception", "run_output")
ARTIFACT_KINDS = ("trace", "compile_debug", "minifier")


@dataclass(frozen=True)
class Diagnostics:
    env: Mapping[str, str]
    note: str


@dataclass(frozen=True)
class Differential:
    """A silent failure's measurement: the in-run probe's switches, the prose feature that asks for
    it, and the judge (reproduction.yaml) that reads what the probe measured."""

    probe: Mapping[str, bool]
    prose: str
    judge: str


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
    pt2: bool = True  # False for the one verdict that says the compiler is not at fault
    fallback: bool = False  # True for the one verdict that says PT2 is involved but no category fits
    graph_break_ids: bool = False  # the verdict carries torch's GBxxxx registry id
    needs_gpu: bool = False  # reproducing it needs a GPU runner
    regression_test: bool = True  # a regression test is generated for it
    differential: Differential | None = None  # how a run that passed is measured for it (silent failures)
    # RE2 over a run's output: what shows the failure's cause (a recompile's failed guard). When the
    # original's output shows it, a minimized candidate's must too (see Category.keeps_cause).
    minimize_keeps: str | None = None
    # how minimizing may start from the failing module compiled alone for one call
    # (runners/reduce/hoist.py): "call" (the call fails), "compare" (the call's result is checked
    # against eager: a difference of values), "replay" (the compiled module called as the script
    # called it: a failure across calls), or "off"
    minimize_hoist: str = "call"
    # what "fails the same way" compares: "signature", or "category" for a failure the script's own
    # check words (an accuracy bug's signature is the user's print or assert, not the compiler's);
    # category-only holds only while every candidate must also run clean with the compiler off
    minimize_same: str = "signature"
    # whether a minimized repro must keep a branch on its input (runners/reduce/shape.py): for
    # failures a branch causes (a graph break on data, a data-dependent guard)
    minimize_branch: bool = False

    def keeps_cause(self, original_output: str, candidate_output: str) -> bool:
        """Whether a candidate's run still shows the cause the original's showed: a repro that sets
        `recompile_limit = 0` fails the same way at its first compile, with no guard ever failing.
        Where the regex captures what kind of cause it is, the candidate's must show every kind the
        original's did: a recompile on a stride-0 `expand` is not one on a size that went 1 -> 0."""
        if self.minimize_keeps is None:
            return True
        cause = re2.compile(self.minimize_keeps)
        if not cause.search(original_output):
            return True
        return bool(cause.search(candidate_output)) and \
            _cause_kinds(cause, original_output) <= _cause_kinds(cause, candidate_output)


def _cause_kinds(cause, output: str) -> set[str]:
    """What the regex's first group captured across the output (none without a group)."""
    if cause.groups < 1:
        return set()
    return {match.group(1) for match in cause.finditer(output) if match.group(1)}


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
    """Every rule table, for one rules directory: categories and patterns, read at once; the other
    tables (tables.py) on first use, each checked against these categories."""

    categories: Mapping[str, Category]
    patterns: tuple[Pattern, ...]  # sorted: highest priority first, then file order
    context: tuple[ContextRule, ...] = ()
    source: Any = field(default=None, compare=False, repr=False)  # the rules directory the other tables come from
    where: str = "rules"

    def in_scope(self, scope: str) -> tuple[Pattern, ...]:
        return tuple(p for p in self.patterns if p.scope == scope)

    @property
    def not_pt2(self) -> str:
        """The id of the verdict "not a compiler failure" (the category with `pt2: false`)."""
        return next(c.id for c in self.categories.values() if not c.pt2)

    @property
    def fallback(self) -> str:
        """The id of the verdict "PT2 is involved, no category fits" (`fallback: true`)."""
        return next(c.id for c in self.categories.values() if c.fallback)

    def is_pt2_category(self, category_id: str) -> bool:
        """A specific PT2 category: neither the not-PT2 verdict nor the fallback."""
        category = self.categories[category_id]
        return category.pt2 and not category.fallback

    def with_fact(self, fact: str) -> tuple[str, ...]:
        """The ids of the categories for which a boolean fact (needs_gpu, graph_break_ids, ...) holds."""
        return tuple(c.id for c in self.categories.values() if getattr(c, fact))

    # -- the other tables, each read and checked once, on first use ----------------------------------

    def _table(self, name: str) -> Any:
        if self.source is None:
            raise RulesError(f"{self.where}: this ruleset was built without a rules directory; cannot read {name}")
        return _load_yaml(self.source / name, f"{self.where}/{name}")

    @cached_property
    def features(self) -> tuple[FeatureRule, ...]:
        return parse_features(self._table("features.yaml"), f"{self.where}/features.yaml")

    @cached_property
    def regression_plans(self) -> Mapping[str, TestPlan]:
        return parse_regression(self._table("regression.yaml"), self.categories, f"{self.where}/regression.yaml")

    @cached_property
    def test_files(self) -> TestFileRules:
        return parse_test_files(self._table("test_files.yaml"), self.categories, f"{self.where}/test_files.yaml")

    @cached_property
    def excerpts(self) -> ExcerptRules:
        return parse_excerpts(self._table("excerpts.yaml"), self.categories, f"{self.where}/excerpts.yaml")

    @cached_property
    def reproduction(self) -> Mapping:
        return parse_reproduction(self._table("reproduction.yaml"), self.categories, f"{self.where}/reproduction.yaml")

    @cached_property
    def ladder(self) -> LadderTable:
        return parse_ladder(self._table("ladder.yaml"), self.categories, f"{self.where}/ladder.yaml")

    @cached_property
    def dispositions(self) -> DispositionTable:
        return parse_dispositions(self._table("disposition.yaml"), self.categories, f"{self.where}/disposition.yaml")

    def check_all(self) -> None:
        """Read and check every table now."""
        for table in ("features", "regression_plans", "test_files", "excerpts", "reproduction", "ladder", "dispositions"):
            getattr(self, table)


def _require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise RulesError(f"{where}: {message}")


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    _require(isinstance(value, list) and all(isinstance(v, str) for v in value), where, "must be a list of strings")
    return tuple(value)


HOIST_MODES = ("call", "compare", "replay", "off")
SAME_MODES = ("signature", "category")


def _choice(value: Any, choices: tuple[str, ...], where: str) -> str:
    _require(value in choices, where, f"must be one of {', '.join(choices)}")
    return value


def _bool(value: Any, where: str) -> bool:
    _require(isinstance(value, bool), where, "must be true or false")
    return value


def parse_category(cat_id: str, raw: Any, where: str) -> Category:
    where = f"{where}: category {cat_id!r}"
    _require(isinstance(cat_id, str) and bool(CATEGORY_ID_RE.match(cat_id)), where, "an id is lower_snake_case")
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
        pt2=_bool(raw.get("pt2", True), f"{where}.pt2"),
        fallback=_bool(raw.get("fallback", False), f"{where}.fallback"),
        graph_break_ids=_bool(raw.get("graph_break_ids", False), f"{where}.graph_break_ids"),
        needs_gpu=_bool(raw.get("needs_gpu", False), f"{where}.needs_gpu"),
        regression_test=_bool(raw.get("regression_test", True), f"{where}.regression_test"),
        differential=_differential(raw.get("differential"), f"{where}.differential"),
        minimize_keeps=_regex(raw.get("minimize_keeps"), f"{where}.minimize_keeps"),
        minimize_hoist=_choice(raw.get("minimize_hoist", "call"), HOIST_MODES, f"{where}.minimize_hoist"),
        minimize_same=_choice(raw.get("minimize_same", "signature"), SAME_MODES, f"{where}.minimize_same"),
        minimize_branch=_bool(raw.get("minimize_branch", False), f"{where}.minimize_branch"),
    )


def _regex(raw: Any, where: str) -> str | None:
    if raw is None:
        return None
    _require(isinstance(raw, str) and raw != "", where, "must be a regular expression")
    try:
        re2.compile(raw)
    except re2.error as exc:
        raise RulesError(f"{where}: not an RE2 expression ({exc})") from None
    return raw


PROBE_SWITCHES = ("compare", "time", "counters")


def _differential(raw: Any, where: str) -> Differential | None:
    if raw is None:
        return None
    _require(isinstance(raw, dict) and isinstance(raw.get("probe"), dict) and isinstance(raw.get("prose"), str)
             and isinstance(raw.get("judge"), str), where, "needs `probe` (switches), `prose` (a feature) and `judge`")
    for switch, value in raw["probe"].items():
        _require(switch in PROBE_SWITCHES and value is True, where, f"probe switches are {', '.join(PROBE_SWITCHES)}: true")
    return Differential(probe=dict(raw["probe"]), prose=raw["prose"], judge=raw["judge"])


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
    for fact, value in (("pt2", False), ("fallback", True)):
        having = [cid for cid, c in categories.items() if getattr(c, fact) is value]
        _require(len(having) == 1, f"{where}/categories.yaml",
                 f"exactly one category must say `{fact}: {str(value).lower()}` (found: {', '.join(having) or 'none'})")
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


def load_ruleset(rules_dir: str | Path | None = None, check_all: bool = False) -> Ruleset:
    """Load the bundled rules, or those in `rules_dir` (same file names). Categories and patterns
    are read now; every other table on first use, once, checked against these categories.
    `check_all` reads and checks them all now (tests and `pt2-triage doctor` do)."""
    base = Path(rules_dir) if rules_dir else resources.files("bot.rules")
    label = str(rules_dir) if rules_dir else "bot/rules"
    categories_doc = _load_yaml(base / "categories.yaml", f"{label}/categories.yaml")
    patterns_doc = _load_yaml(base / "patterns.yaml", f"{label}/patterns.yaml")
    ruleset = replace(parse_ruleset(categories_doc, patterns_doc, where=label), source=base, where=label)
    if check_all:
        ruleset.check_all()
    return ruleset
