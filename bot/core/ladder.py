"""The ablation ladder, decided: which layer of the PT2 stack owns a reproduced failure.

A PT2 oncall localizes a failure by re-running it one switch at a time: compiler off, then
backend="eager" (Dynamo alone), "aot_eager" (+ AOTAutograd), "aot_eager_decomp_partition"
(+ decompositions and the partitioner), "inductor". The first rung that fails the way the repro
failed owns it (bot/rules/ladder.yaml says which layer each rung adds, and what owning means).
The runs happen in bot/pipeline/ladder.py; everything here is a pure function of the table, the
repro's text and the runs' observations.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from bot.core.tables import JUDGES, require, require_regex
from bot.core.tracebacks import PT2_FRAME_RE

# What a rung's run showed, compared with the repro's own failure.
FAILS = "fails"  # fails the way the repro failed (same category, or same exception type)
FAILS_DIFFERENTLY = "fails_differently"
PASSES = "passes"
NOT_NEEDED = "not_needed"  # not run: a rung below it already fails the same way and owns the failure


@dataclass(frozen=True)
class Rung:
    id: str
    title: str
    probe: Mapping[str, Any]  # the in-run probe's switches (runners/_torch_probe.py)
    layer: str | None = None  # the layer a ladder rung adds; None for a side switch
    when_code: str | None = None  # a switch runs when the repro's code matches ...
    when_categories: tuple[str, ...] = ()  # ... or the failure is one of these categories

    @property
    def backend(self) -> str | None:
        return self.probe.get("backend")


@dataclass(frozen=True)
class Layer:
    id: str
    owner: str
    says: str
    categories: tuple[str, ...]
    refile: str
    # The category of a failure the script's own code raises, only with the compiler on (the
    # compiled_only rule's default), when this layer owns it; None: that category stands.
    compiled_only: str | None = None


@dataclass(frozen=True)
class LadderTable:
    rungs: tuple[Rung, ...]
    switches: tuple[Rung, ...]
    layers: Mapping[str, Layer]
    requires_code: str
    pt2_code: str  # names of the compiler's entry points and modules (compiler_free)
    judges: Mapping[str, str]  # category -> the probe judge that tells a rung's silent failure
    same_refusal: tuple[tuple[re.Pattern, re.Pattern], ...] = ()  # (eager, compiled) wordings of one error

    @property
    def compiler_off(self) -> Rung:
        return self.rungs[0]


@dataclass(frozen=True)
class Observed:
    """One run as the ladder sees it (from the launcher's record and the run's classification)."""

    status: str  # the runner's status: ok, error, timeout, limit, crashed
    failed: bool  # the launcher saw it fail
    category: str | None = None
    exception: str | None = None  # "Type: message" of the uncaught exception
    silent_differs: bool | None = None  # the judge's finding, for a silent failure (None: not measured)


@dataclass(frozen=True)
class RungResult:
    rung: str
    title: str
    outcome: str
    category: str | None = None
    exception: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """What the ladder concludes: the owning layer, the category it re-files to, the cheapest
    backend that still fails (for the regression test), and a sentence that says why."""

    layer: str | None
    owner: str | None
    category: str | None
    cheapest_backend: str | None
    sentence: str
    workarounds: tuple[str, ...] = ()  # side switches that make the failure go away


# --- the table ----------------------------------------------------------------------------------

def parse_ladder(doc: Any, categories: Mapping, where: str) -> LadderTable:
    """bot/rules/ladder.yaml, checked: rungs name known layers, layers name known categories."""
    require(isinstance(doc, dict), where, "must be a mapping")
    for name in ("rungs", "switches", "layers", "requires_code", "pt2_code"):
        require(name in doc, where, f"missing `{name}`")
    layers = {lid: _layer(lid, raw, categories, f"{where}: layers.{lid}") for lid, raw in doc["layers"].items()}
    rungs = tuple(_rung(raw, f"{where}: rungs[{i}]") for i, raw in enumerate(doc["rungs"]))
    require(len(rungs) >= 2 and rungs[0].probe.get("compiler") == "off", where,
            "the first rung must turn the compiler off")
    for rung in rungs:
        require(rung.layer in layers, f"{where}: {rung.id}", f"unknown layer {rung.layer!r}")
    switches = tuple(_rung(raw, f"{where}: switches[{i}]", switch=True) for i, raw in enumerate(doc["switches"]))
    judges = dict(doc.get("judges") or {})
    for category, judge in judges.items():
        require(category in categories and judge in JUDGES, f"{where}: judges.{category}", f"unknown category or judge {judge!r}")
    re.compile(doc["requires_code"])
    re.compile(doc["pt2_code"])
    same_refusal = tuple(_refusal(raw, f"{where}: same_refusal[{i}]") for i, raw in enumerate(doc.get("same_refusal") or ()))
    return LadderTable(rungs, switches, layers, doc["requires_code"], doc["pt2_code"], judges, same_refusal)


def _refusal(raw: Any, where: str) -> tuple[re.Pattern, re.Pattern]:
    require(isinstance(raw, dict) and {"eager", "compiled"} <= set(raw), where, "needs eager and compiled")
    return require_regex(raw["eager"], f"{where}.eager"), require_regex(raw["compiled"], f"{where}.compiled")


def _rung(raw: Any, where: str, switch: bool = False) -> Rung:
    require(isinstance(raw, dict) and {"id", "title", "probe"} <= set(raw), where, "needs id, title and probe")
    if switch:
        re.compile(raw.get("when_code") or "")
        return Rung(raw["id"], raw["title"], dict(raw["probe"]), None, raw.get("when_code"),
                    tuple(raw.get("when_categories") or ()))
    require("layer" in raw, where, "a rung needs the layer it adds")
    return Rung(raw["id"], raw["title"], dict(raw["probe"]), raw["layer"])


def _layer(lid: str, raw: Any, categories: Mapping, where: str) -> Layer:
    require(isinstance(raw, dict) and {"owner", "says", "categories", "refile"} <= set(raw), where,
            "needs owner, says, categories and refile")
    for cid in list(raw["categories"]) + [raw["refile"]] + ([raw["compiled_only"]] if raw.get("compiled_only") else []):
        require(cid in categories, where, f"unknown category {cid!r}")
    return Layer(lid, raw["owner"], raw["says"], tuple(raw["categories"]), raw["refile"], raw.get("compiled_only"))


# --- planning -----------------------------------------------------------------------------------

def not_applicable(table: LadderTable, script: str | None, category: str, failed: bool) -> str | None:
    """Why the ladder cannot run for this repro, or None when it can."""
    if not script:
        return "there is no repro to run"
    if not re.search(table.requires_code, code_names(script)):
        return "the repro has no torch.compile call to switch (torch.export and AOTInductor have no backend switch)"
    if not failed and category not in table.judges:
        return f"a {category} finding is a measurement, not a failure a backend switch can localize"
    return None


PLAIN_MODULES = frozenset(sys.stdlib_module_names) | {"torch", "numpy"}


def compiler_free(table: LadderTable, script: str, output: str) -> bool:
    """The script never reaches the compiler: no name it uses is one of the table's `pt2_code`, it
    imports nothing but torch, numpy and the standard library (a package may compile inside), and
    its failure's traceback passed through no compiler frame. Its own failing run is then the
    compiler-off rung, run already (pytorch#141219: an ATen op's floating-point exception)."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return False
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    return (imported <= PLAIN_MODULES and not re.search(table.pt2_code, used_names(tree))
            and not PT2_FRAME_RE.search(output or ""))


def used_names(tree: ast.AST) -> str:
    """Every name the code uses, one per line: dotted names, plain names, and what it imports
    (module paths and the names taken from them)."""
    names = _dotted_names(tree, loads_only=False) | {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.name for alias in node.names} | ({node.module} if getattr(node, "module", None) else set())
    return "\n".join(sorted(names))


CUSTOM_BACKEND = re.compile(r"\bbackend\s*=")


def switchable(table: LadderTable, script: str) -> bool:
    """Whether the probe's backend switch reaches the script's compile: a torch.compile call with
    the default backend (a script that names its backend keeps it)."""
    return bool(re.search(table.requires_code, code_names(script))) and not CUSTOM_BACKEND.search(script)


def cheaper_rungs(table: LadderTable, category: str | None) -> tuple[Rung, ...]:
    """The rungs between the compiler off and the last (Inductor) whose layer can fail this way:
    the cheaper backends a failure of `category` may already show on, cheapest first (all of them
    for None: a failure not yet known)."""
    return tuple(r for r in table.rungs[1:-1] if category is None or category in table.layers[r.layer].categories)


def code_names(script: str) -> str:
    """The dotted names the code uses, one per line (`torch.compile`, `torch._dynamo.optimize`, ...):
    what a rule about the code reads, so a comment or a string that mentions torch.compile is not a call."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return script
    return "\n".join(sorted(_dotted_names(tree)))


def _dotted_names(tree: ast.AST, loads_only: bool = True) -> set[str]:
    return {ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and _dotted(node)
            and (not loads_only or isinstance(node.ctx, ast.Load))}


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def plan(table: LadderTable, script: str, category: str) -> tuple[Rung, ...]:
    """The rungs to run, then the side switches whose condition holds."""
    return table.rungs + switches_for(table, script, category)


def switches_for(table: LadderTable, script: str, category: str) -> tuple[Rung, ...]:
    """The side switches the repro's code or its category calls for."""
    return tuple(s for s in table.switches
                 if category in s.when_categories or (s.when_code and re.search(s.when_code, script)))


def owning_rung(table: LadderTable, results: tuple[RungResult, ...]) -> Rung | None:
    """The first ladder rung that failed the way the repro did."""
    by_id = {r.rung: r for r in results}
    return next((r for r in table.rungs if by_id.get(r.id) and by_id[r.id].outcome == FAILS), None)


def owned_below(table: LadderTable, results: Mapping[str, RungResult], rung: Rung) -> bool:
    """Whether a ladder rung below `rung` already fails the way the repro did: that rung owns the
    failure whatever `rung` would show (a graph break that backend="eager" shows is Dynamo's; the
    compiler-off rung failing makes every other rung moot), so `rung` need not run."""
    for lower in table.rungs:
        if lower.id == rung.id:
            return False
        if lower.id in results and results[lower.id].outcome == FAILS:
            return True
    return False


def switch_probe(switch: Rung, owner: Rung | None, table: LadderTable, category: str) -> dict[str, Any] | None:
    """A side switch runs on the backend of the rung that owns the failure: a graph break that
    backend="eager" already shows is asked about fullgraph=False with "eager", not with a 30-second
    Inductor compile. None when the compiler-off rung owns it (no switch of the compiler can help).
    With no owner the switch runs on the repro's own backend."""
    if owner is table.compiler_off:
        return None
    probe = probe_for(switch, table, category)
    if owner is not None and owner.backend:
        probe.setdefault("backend", owner.backend)
    return probe


def probe_for(rung: Rung, table: LadderTable, category: str) -> dict[str, Any]:
    """The probe switches of one rung's run: the rung's own, plus the judge's measurement when the
    failure is silent (an accuracy mismatch is seen only by comparing)."""
    probe = dict(rung.probe)
    judge = table.judges.get(category)
    if judge and rung.probe.get("compiler") != "off":
        probe[judge] = True
    return probe


# --- judging one rung ---------------------------------------------------------------------------

def rung_outcome(rung: Rung, target: Observed, seen: Observed, same_refusal: tuple = ()) -> str:
    """How `seen` (the run at `rung`) compares with `target` (the repro's own failing run);
    `same_refusal` is the table's pairs of wordings of one error, eager's and the compiled code's."""
    if seen.status in ("timeout", "limit"):
        return seen.status
    if seen.silent_differs is not None and not seen.failed:
        return FAILS if seen.silent_differs else PASSES
    if not seen.failed:
        return PASSES
    if rung.probe.get("compiler") == "off":
        return FAILS if _eager_shares(target, seen, same_refusal) else FAILS_DIFFERENTLY
    if seen.category == target.category or _type(seen.exception) == _type(target.exception):
        return FAILS
    return FAILS_DIFFERENTLY


def _type(exception: str | None) -> str | None:
    """The exception's short type name ("torch._dynamo.exc.Unsupported: ..." -> "Unsupported")."""
    if not exception:
        return None
    return exception.partition(":")[0].strip().rsplit(".", 1)[-1] or None


# Dynamo compiles a Python `assert` on tensor data into `torch._assert`, which raises this instead
# of AssertionError: the same assert failing, with and without the compiler.
COMPILED_ASSERT = re.compile(r"^(?:builtins\.)?RuntimeError: assertion error\b")


def _eager_shares(target: Observed, seen: Observed, same_refusal: tuple = ()) -> bool:
    """Without the compiler, the run fails with the same error: the same type, the eager
    message inside the compiled one (Dynamo wraps an eager error it meets while tracing:
    `TorchRuntimeError: Dynamo failed to run FX node ... mat1 and mat2 shapes cannot be multiplied`),
    an `assert` that the compiled code raises as `RuntimeError: assertion error`, or a pair of
    the table's `same_refusal` wordings."""
    if _type(seen.exception) == _type(target.exception) or seen.category == target.category:
        return True
    if any(eager.search(seen.exception or "") and compiled.search(target.exception or "")
           for eager, compiled in same_refusal):
        return True
    if _type(seen.exception) == "AssertionError" and COMPILED_ASSERT.match(target.exception or ""):
        return True
    message = (seen.exception or "").partition(":")[2].strip().split("\n", 1)[0][:80]
    return len(message) >= 12 and message in (target.exception or "")


# --- the verdict --------------------------------------------------------------------------------

def decide(table: LadderTable, results: tuple[RungResult, ...], category: str, compiled_only: bool = False) -> Verdict:
    """The first ladder rung that fails the same way owns the failure; side switches that pass
    are workarounds. `compiled_only`: `category` is only the default of a failure raised in the
    script's own code with the compiler on, which the owning layer may name better (a backward
    error that AOTAutograd's outputs cause is AOTAutograd's, LABELING.md tie-break 9)."""
    by_id = {r.rung: r for r in results}
    workarounds = tuple(s.title for s in table.switches if by_id.get(s.id) and by_id[s.id].outcome == PASSES)
    owner_rung = owning_rung(table, results)
    if owner_rung is None:
        return Verdict(None, None, None, None, "no rung of the ladder failed the way the repro did "
                       "(the repro may use a backend or setting the ladder does not switch)", workarounds)
    layer = table.layers[owner_rung.layer]
    refiled = category if category in layer.categories else layer.refile
    if compiled_only and layer.compiled_only:
        refiled = layer.compiled_only
    cheapest = owner_rung.backend
    sentence = f"{layer.says[0].upper()}{layer.says[1:]}."
    if refiled != category:
        sentence += f" Re-filed from {category} to {refiled}."
    return Verdict(layer.id, layer.owner, refiled, cheapest, sentence, workarounds)

