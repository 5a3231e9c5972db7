"""The triage report: everything one triage run learned, as versioned JSON.

The runner side produces `report.json`; the trusted side (App or the Action's publish job)
reads it back to comment, label and open the PR. `from_dict(to_dict(r)) == r` is tested, and
`SCHEMA_VERSION` changes whenever a field changes meaning.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, get_args, get_origin, get_type_hints

from bot import __version__
from bot.core.disposition import Disposition
from bot.core.ladder import RungResult
from bot.core.records import Classification, ReporterEnvironment

SCHEMA_VERSION = 3  # 2: runs say whether the launcher saw them fail; silent checks; reasons for not reproducing
#                     3: the ablation ladder, the disposition and a verified workaround
READABLE_VERSIONS = (1, 2, 3)  # each version only adds fields with defaults: an older runner's report still reads


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
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise ValueError(f"report schema version {version!r} is not supported (this tool reads "
                             f"{', '.join(map(str, READABLE_VERSIONS))})")
        return replace(_build(cls, data), schema_version=SCHEMA_VERSION)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _build(cls: type, data: Any) -> Any:
    """Rebuild a (nested) frozen dataclass from plain JSON values using its type hints."""
    hints = get_type_hints(cls)
    values = {}
    for f in fields(cls):
        if f.name in data:
            values[f.name] = _coerce(hints[f.name], data[f.name])
    return cls(**values)


def _coerce(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(hint)
    args = [a for a in get_args(hint) if a is not type(None)]
    if origin is None and is_dataclass(hint):
        return _build(hint, value)
    if origin in (tuple,) and args:
        return tuple(_coerce(args[0], v) for v in value)
    if origin is not None and len(args) == 1 and origin not in (list, dict, tuple):  # Optional[X] / X | None
        return _coerce(args[0], value)
    if len(args) == 1 and is_dataclass(args[0]):
        return _coerce(args[0], value)
    return value

