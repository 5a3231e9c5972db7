"""The triage report: everything one triage run learned, as versioned JSON.

The runner side produces `report.json`; the trusted side (App or the Action's publish job)
reads it back to comment, label and open the PR. `from_dict(to_dict(r)) == r` is tested, and
`SCHEMA_VERSION` changes whenever a field changes meaning.

A report.json is untrusted (a repro ran next to it): `from_dict` checks every field against its type
and raises `ReportError` (a ValueError) on the first that does not fit, so a hostile or broken report
is refused where it is read, not halfway through publishing it. `with_known_category` then maps a
category this side does not know to `unknown`, with a note.
"""
from __future__ import annotations

import json
import math
import types
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, Union, get_args, get_origin, get_type_hints

from bot import __version__
from bot.core.disposition import Disposition
from bot.core.ladder import RungResult
from bot.core.records import Classification, ReporterEnvironment

SCHEMA_VERSION = 3  # 2: runs say whether the launcher saw them fail; silent checks; reasons for not reproducing
#                     3: the ablation ladder, the disposition and a verified workaround
READABLE_VERSIONS = (1, 2, 3)  # each version only adds fields with defaults: an older runner's report still reads
UNKNOWN_CATEGORY = "unknown"  # the ruleset's fallback: where a category this side does not know is shown
MAX_FREE_DEPTH = 16  # nesting allowed in the free-form objects (a run's probe, a check's numbers)


class ReportError(ValueError):
    """A report.json this tool cannot read: a field missing, of the wrong type, or of the wrong shape."""


@dataclass(frozen=True)
class MachineEnvironment:
    """Where a repro actually ran (probed, not reported)."""

    python_version: str | None = None
    torch_version: str | None = None
    triton_version: str | None = None
    cuda_version: str | None = None
    cuda_available: bool = False
    device_name: str | None = None
    platform: str | None = None
    cxx_compiler: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One sandboxed run of the repro and what its output says."""

    purpose: str  # "first run", "diagnostics for <category>", "flakiness check", "minified repro"
    env: dict[str, str]
    status: str  # ok | failed | crashed | timeout | limit
    exit_code: int | None
    signal: str | None
    duration_s: float
    peak_rss_bytes: int | None
    limits_fired: tuple[str, ...]
    network_isolated: bool
    warm: bool
    classification: Classification
    output_tail: str  # the last lines of stdout+stderr, for excerpts
    output_dropped_bytes: int = 0
    failed: bool = False  # the launcher saw a non-zero exit or a signal (printed text never sets this)
    exception: str | None = None  # "Type: message" of the uncaught exception the launcher's bootstrap saw
    probe: dict | None = None  # the in-run probe's measurements, when the run was a differential one
    sandbox: str = ""  # how it was isolated ("bubblewrap 0.8.0, uid 65534, seccomp" or "none (unsafe): ...")
    limits_mechanism: str = ""  # "rlimit" (per process) or "cgroup v2" (the whole run)
    blocked: str | None = None  # it failed before reaching the bug (a `blocks` reason, e.g. torch_api_changed)


@dataclass(frozen=True)
class MinifierResult:
    launcher_found: bool
    repro_source: str | None
    verified: bool  # the repro itself fails with the same category
    signature: str | None
    duration_s: float
    note: str


@dataclass(frozen=True)
class SilentCheck:
    """One differential measurement of a run that did not crash."""

    kind: str  # accuracy | performance | recompilation
    reproduced: bool
    summary: str
    numbers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    status: str  # reproduced | not_reproduced | flaky | needs_gpu | timeout | limit | crashed | error
    reproduced: bool
    runs_total: int
    runs_reproduced: int
    device: str  # cpu | cuda
    category_from_text: str | None
    category_from_run: str | None
    category_changed: bool
    summary: str  # one sentence a person reads first
    runs: tuple[RunRecord, ...] = ()
    artifacts: tuple[str, ...] = ()  # paths relative to the report's directory
    minifier: MinifierResult | None = None
    silent: tuple[SilentCheck, ...] = ()  # differential measurements (accuracy, performance, recompilation)
    reason: str | None = None  # why it did not reproduce: needs_gpu, needs_package, fixed_since, ...
    reason_text: str | None = None
    next_step: str | None = None
    script_changed: str | None = None  # how the script that ran differs from the issue's ("import torch.nn as nn added")


@dataclass(frozen=True)
class MinimizedRepro:
    """The reducer's result: a script that still fails the same way (the original category and
    signature, or the category alone where it says so: Category.minimize_same)."""

    source: str
    signature_preserved: bool
    lines_before: int
    lines_after: int
    tokens_before: int
    tokens_after: int
    runs: int
    wall_s: float
    stop_reason: str
    runs_by_pass: dict[str, int] = field(default_factory=dict)  # where the runs went (statement, inline, ...)
    seconds_by_pass: dict[str, float] = field(default_factory=dict)
    progress: tuple[tuple[float, int, int, str], ...] = ()  # (seconds, runs, tokens, pass) at each accepted step
    runs_cut: int = 0  # candidate runs stopped early: still running well past those that failed the same way
    # the minimized repro's own failure: where the category matches on itself alone (an accuracy
    # check's words are the script's), the signature a test made from it must show
    final_signature: str | None = None


@dataclass(frozen=True)
class TestSuggestion:
    """Where the regression test belongs in PyTorch, and why."""

    __test__ = False  # not a pytest class, despite the name

    path: str
    reason: str
    test_class: str | None = None  # found in a given checkout, else the class the generated file defines
    confirmed: bool = False  # the file exists in the checkout that was given
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class RegressionTest:
    """A generated test that must fail now, for the same reason as the repro, and pass once fixed."""

    __test__ = False

    test_name: str
    class_name: str
    assertion: str  # what it asserts: no_error | matches_eager | export_succeeds | ...
    device: str  # cpu | cuda
    method_source: str  # the method alone, indented for a class body
    file_source: str  # a standalone test file with run_tests()
    verification: str  # fails_same | fails_similar (same category) | fails_differently | passes | not_run
    verification_note: str
    failure_signature: str | None = None
    patch: str | None = None  # unified diff adding the method to the suggested file of a checkout

    @property
    def verified_fails(self) -> bool:
        return self.verification == "fails_same"


@dataclass(frozen=True)
class LadderReport:
    """The ablation ladder's runs (bot/core/ladder.py) and what they conclude."""

    rungs: tuple[RungResult, ...] = ()
    layer: str | None = None
    owner: str | None = None
    category: str | None = None  # the category the owning layer re-files to
    cheapest_backend: str | None = None
    sentence: str = ""
    workarounds: tuple[str, ...] = ()  # side switches (dynamic=False, fullgraph=False) that avoid it
    skipped: str | None = None  # why the ladder did not run
    script: str = "repro"  # which script climbed it: repro | minimized
    wall_s: float = 0.0


@dataclass(frozen=True)
class Workaround:
    """A rewrite of the repro that shows a limitation's workaround, and whether a run confirmed it."""

    kind: str
    note: str
    source: str
    verified: bool
    verification: str  # what the run showed


@dataclass(frozen=True)
class TriageReport:
    classification: Classification
    source: str  # issue | comment | ci_job | local_file
    reference: str | None = None
    reporter_environment: ReporterEnvironment = field(default_factory=ReporterEnvironment)
    machine: MachineEnvironment | None = None
    reproduction: Reproduction | None = None
    issue_number: int | None = None
    title: str | None = None
    repro_source: str | None = None  # the script that was run, as found in the issue or given
    minimized: MinimizedRepro | None = None
    test_suggestion: TestSuggestion | None = None
    regression_test: RegressionTest | None = None
    ladder: LadderReport | None = None
    disposition: Disposition | None = None
    workaround: Workaround | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    stage_errors: dict[str, str] = field(default_factory=dict)  # stage -> the internal error it was skipped for
    schema_version: int = SCHEMA_VERSION
    tool_version: str = __version__

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> "TriageReport":
        """The report in `data` (parsed JSON), every field checked against its type; ReportError
        names the first field that does not fit."""
        if not isinstance(data, dict):
            raise ReportError(f"a report is a JSON object, not {type(data).__name__}")
        version = data.get("schema_version")
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            raise ReportError(f"report schema version {str(version)[:20]} is not supported (this tool reads "
                              f"{', '.join(map(str, READABLE_VERSIONS))})")
        return replace(_build(cls, data, "report"), schema_version=SCHEMA_VERSION)


def with_known_category(report: TriageReport, categories: frozenset[str] | set[str]) -> TriageReport:
    """The report, its category one of `categories` (the ruleset's): a runner with a newer ruleset may
    name one this side has no labels or wording for; it is shown as `unknown`, and the comment says
    which category the runner named. Without an `unknown` category to fall back to, ReportError."""
    category = report.classification.category
    if category in categories:
        return report
    if UNKNOWN_CATEGORY not in categories:
        raise ReportError(f"unknown category {category[:60]!r}")
    note = f"unknown category {category[:60]!r} (the runner's ruleset is newer than this one), shown as {UNKNOWN_CATEGORY}"
    return replace(report, classification=replace(report.classification, category=UNKNOWN_CATEGORY),
                   stage_errors={**report.stage_errors, "category": note})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _build(cls: type, data: Any, where: str) -> Any:
    """Rebuild a (nested) frozen dataclass from plain JSON values, each checked against its type hint;
    keys it does not know (a newer runner's fields) are left out."""
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected an object, got {type(data).__name__}")
    hints = get_type_hints(cls)
    values = {f.name: _coerce(hints[f.name], data[f.name], f"{where}.{f.name}") for f in fields(cls) if f.name in data}
    missing = [f.name for f in fields(cls) if f.name not in values and f.init
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise ReportError(f"{where}: missing {', '.join(missing)}")
    return cls(**values)


def _coerce(hint: Any, value: Any, where: str) -> Any:
    """`value` as the type `hint` says, or ReportError: JSON arrays become tuples, integers pass for
    floats, and a bool is never an int."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        [inner] = [a for a in args if a is not type(None)]
        return _coerce(inner, value, where)
    if is_dataclass(hint):
        return _build(hint, value, where)
    if origin is tuple:
        return _coerce_tuple(args, value, where)
    if origin is dict:
        key_type, value_type = args
        _expect(isinstance(value, dict), "an object", value, where)
        return {_coerce(key_type, k, where): _coerce(value_type, v, f"{where}[{k!r:.40}]") for k, v in value.items()}
    if hint is dict:
        _expect(isinstance(value, dict) and _depth(value) <= MAX_FREE_DEPTH, "a shallow object", value, where)
        return value
    if hint is bool:
        _expect(isinstance(value, bool), "true or false", value, where)
        return value
    if hint is int:
        _expect(isinstance(value, int) and not isinstance(value, bool), "an integer", value, where)
        return value
    if hint is float:
        _expect(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
                "a number", value, where)
        return float(value)
    if hint is str:
        _expect(isinstance(value, str), "a string", value, where)
        return value
    raise TypeError(f"{where}: the report reader has no rule for {hint!r}")  # a field type added without one


def _coerce_tuple(args: tuple, value: Any, where: str) -> tuple:
    _expect(isinstance(value, (list, tuple)), "an array", value, where)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_coerce(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    _expect(len(value) == len(args), f"an array of {len(args)}", value, where)
    return tuple(_coerce(arg, item, f"{where}[{i}]") for i, (arg, item) in enumerate(zip(args, value)))


def _expect(ok: bool, what: str, value: Any, where: str) -> None:
    if not ok:
        raise ReportError(f"{where}: expected {what}, got {type(value).__name__}")


def _depth(value: Any) -> int:
    """How deeply JSON arrays and objects nest in `value` (0 for a scalar); stops counting past the cap."""
    level, current = 0, [value]
    while current and level <= MAX_FREE_DEPTH:
        current = [child for item in current if isinstance(item, (dict, list))
                   for child in (item.values() if isinstance(item, dict) else item)]
        level += 1
    return level - 1 if not current else level
