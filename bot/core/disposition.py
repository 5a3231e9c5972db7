"""Bug or expected behaviour: every report's disposition, from bot/rules/disposition.yaml (pure).

Not every reproduced failure is a compiler bug. A graph break that torch's registry calls
fundamental, or a Python `if` on tensor data under fullgraph=True, is documented behaviour with a
workaround; a repro that fails with the compiler off is the code's own error. The first rule of the
table that holds decides, and its reason (filled in from the facts) is shown to the reader.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from bot.core.markdown import quoted
from bot.core.tables import RulesError, require

DISPOSITIONS = ("bug", "limitation", "user_error", "needs_info")
STATES = ("reproduced", "not_run", "not_reproduced")
WORKAROUNDS = ("hints", "torch_cond", "capture_scalar_outputs", "allow_unspec_int_on_nn_module", "maybe_mark_dynamic",
               "fallback_random", "hook_guards", "freezing_off")
CONDITIONS = ("state", "layer", "message", "no_script", "code", "traced", "verified")
# torch's hints: a `Hint:` line, or a guard's `(HINT: ...)` sentence after its recompile reason (the
# guard dump's `(HINT: type ReLU)` annotations are not advice)
HINT = re.compile(r"^\s*Hint:\s*(.+)$|\(HINT:\s*([^()\n]{40,}(?:\([^()\n]*\)[^()\n]*)*)\)", re.M)


@dataclass(frozen=True)
class DispositionRule:
    id: str
    disposition: str
    reason: str  # a template: {eager_error}, {reason_text}, {ladder_note}
    states: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    message: re.Pattern | None = None
    no_script: bool | None = None
    workaround: tuple[str, ...] = ()
    code: re.Pattern | None = None  # over the script that ran
    verified: tuple[str, ...] = ()  # workaround kinds a run must have seen work (Facts.verified)
    traced: re.Pattern | None = None  # over the part of that script PT2 traces (Facts.traced)


@dataclass(frozen=True)
class DispositionTable:
    meanings: Mapping[str, str]
    rules: tuple[DispositionRule, ...]


@dataclass(frozen=True)
class Facts:
    """What the disposition is decided from (all plain values the pipeline already has)."""

    state: str  # reproduced | not_run | not_reproduced
    has_script: bool
    failure_text: str  # the reproducing run's output, else the issue text when nothing ran
    layer: str | None = None  # the ladder's owning layer
    eager_error: str | None = None  # the compiler-off rung's exception
    reason_text: str | None = None  # why it did not run or reproduce
    ladder_note: str | None = None  # the ladder's sentence
    script: str = ""  # the script that ran (the minimized repro where there is one)
    traced: str | None = None  # the part of it PT2 traces (runners/reduce/shape.traced_source); None: all of it
    verified: tuple[str, ...] = ()  # workaround kinds whose rewrite of the script ran clean


@dataclass(frozen=True)
class Disposition:
    kind: str
    rule: str
    reason: str
    meaning: str
    workarounds: tuple[str, ...] = ()  # kinds to try (bot/core/workaround.py)
    hints: tuple[str, ...] = ()  # torch's own "Hint:" lines from the failure

    @property
    def wants_regression_test(self) -> bool:
        """A limitation or a user error gets no test: no fix is coming. A report not reproduced here
        still gets one (it passes now: a guard, offered, not filed)."""
        return self.kind in ("bug", "needs_info")

    @property
    def wants_pull_request(self) -> bool:
        return self.kind == "bug"


def parse_dispositions(doc: Any, categories: Mapping, where: str) -> DispositionTable:
    """bot/rules/disposition.yaml, checked; the last rule must hold always (an empty `when`)."""
    require(isinstance(doc, dict) and {"dispositions", "rules"} <= set(doc), where, "needs dispositions and rules")
    require(set(doc["dispositions"]) == set(DISPOSITIONS), where, f"dispositions must be {', '.join(DISPOSITIONS)}")
    rules = tuple(_rule(raw, f"{where}: rules[{i}]") for i, raw in enumerate(doc["rules"]))
    last = rules[-1] if rules else None
    require(last is not None and not last.states and not last.layers and last.message is None and last.code is None
            and last.traced is None and last.no_script is None and not last.verified, where, "the last rule must have an empty `when` (the default)")
    return DispositionTable(dict(doc["dispositions"]), rules)


def _rule(raw: Any, where: str) -> DispositionRule:
    require(isinstance(raw, dict) and {"id", "disposition", "when", "reason"} <= set(raw), where,
            "needs id, disposition, when and reason")
    require(raw["disposition"] in DISPOSITIONS, where, f"unknown disposition {raw['disposition']!r}")
    when = raw["when"] or {}
    require(set(when) <= set(CONDITIONS), where, f"`when` may name only {', '.join(CONDITIONS)}")
    require(set(when.get("state", ())) <= set(STATES), where, f"state must be among {', '.join(STATES)}")
    workaround = tuple(raw.get("workaround") or ())
    require(set(workaround) <= set(WORKAROUNDS), where, f"workaround must be among {', '.join(WORKAROUNDS)}")
    verified = tuple(when.get("verified", ()))
    require(set(verified) <= set(WORKAROUNDS) - {"hints"}, where, "`verified` names workaround kinds")
    return DispositionRule(raw["id"], raw["disposition"], raw["reason"], tuple(when.get("state", ())),
                           tuple(when.get("layer", ())), _regex(when, "message", where), when.get("no_script"), workaround,
                           _regex(when, "code", where), verified, _regex(when, "traced", where))


def _regex(when: dict, key: str, where: str) -> re.Pattern | None:
    try:
        return re.compile(when[key]) if key in when else None
    except re.error as exc:
        raise RulesError(f"{where}: `{key}` is not a valid regex: {exc}") from None


def holds(rule: DispositionRule, facts: Facts) -> bool:
    return holds_but_verified(rule, facts) and set(rule.verified) <= set(facts.verified)


def holds_but_verified(rule: DispositionRule, facts: Facts) -> bool:
    return ((not rule.states or facts.state in rule.states)
            and (not rule.layers or facts.layer in rule.layers)
            and (rule.message is None or bool(rule.message.search(facts.failure_text)))
            and (rule.no_script is None or rule.no_script == (not facts.has_script))
            and (rule.code is None or bool(rule.code.search(facts.script)))
            and (rule.traced is None or bool(rule.traced.search(facts.script if facts.traced is None else facts.traced))))


def explanations(table: DispositionTable, failure_text: str) -> frozenset[str]:
    """The rules whose `message` holds on a run's output: the documented causes its words name. A
    minimized repro must keep them (bot/pipeline/minimize.py): a `Dim` specialized at 64 by a cached
    mask and one specialized because its example has size 1 fail with the same error line, and only
    the first is the report's bug."""
    return frozenset(rule.id for rule in table.rules if rule.message is not None and rule.message.search(failure_text))


def to_verify(table: DispositionTable, facts: Facts) -> tuple[str, ...]:
    """The workaround kinds to run before deciding: those of the rules, ahead of the one that holds
    now, that would hold if their workaround were seen to work (a limitation claimed only on a run's
    word: Inductor's own random numbers explain a mismatch only if eager's make it go away)."""
    kinds = []
    for rule in table.rules:
        if holds(rule, facts):
            break
        if rule.verified and holds_but_verified(rule, facts):
            kinds += [kind for kind in rule.verified if kind not in facts.verified]
    return tuple(dict.fromkeys(kinds))


def decide(table: DispositionTable, facts: Facts) -> Disposition:
    rule = next(r for r in table.rules if holds(r, facts))
    values = {"eager_error": quoted(facts.eager_error, 120) if facts.eager_error else "the same error",  # the run's words
              "reason_text": facts.reason_text or "no reason was recorded",
              "ladder_note": f": {facts.ladder_note[0].lower()}{facts.ladder_note[1:].rstrip('.')}" if facts.ladder_note else ""}
    hints = tuple(dict.fromkeys((m.group(1) or m.group(2)).strip() for m in HINT.finditer(facts.failure_text)))[:6] \
        if "hints" in rule.workaround else ()
    return Disposition(rule.disposition, rule.id, rule.reason.format(**values), table.meanings[rule.disposition],
                       tuple(w for w in rule.workaround if w != "hints"), hints)
