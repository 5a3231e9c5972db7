"""One verdict from all the evidence: the ranked rules, the code and prose features, the text model (pure).

The order of trust, each step measured on held-out real reports (scripts/train_text_model.py):
1. A decisive rule on the final error wins (an `Unsupported` raised by Dynamo is a graph break
   whatever the title says; a missing C++ compiler is an install problem), if it was right on at
   least `DECISIVE_MIN_PRECISION` of the held-out reports it fired on: a wrapper such as
   `BackendCompilerFailed` fires on failures of every stage, so it is evidence, not a verdict. Its
   confidence is that precision. The catch-all `not_pt2` rules (an error whose traceback never
   enters the compiler) are evidence only: pasted tracebacks are often cut before the compiler's
   frames.
2. Otherwise the text model's distribution decides; it has read the title, the body, the code
   features and which weak rules fired.
3. `not_pt2` needs positive evidence. A report whose code calls the compiler, or whose error runs
   through it, is never `not_pt2` unless the reporter says eager fails too; a report whose reporter
   says the compiler is not in use, with nothing in it to contradict that, or that shows a tool the
   compiler needs missing (LABELING.md tie-break 7), is always `not_pt2`. Any other report can be
   `not_pt2`, but with more than `MENTIONED_NOT_PT2_CAP` only when something says so positively:
   the reporter did not use the compiler or says eager fails too, the code uses TorchScript, FX
   tracing or the legacy ONNX exporter, or the text never speaks of compiling at all.
4. Context rules (patterns.yaml) re-file the verdict by the entry point the code calls: a
   data-dependent guard inside torch.export is an export failure.
5. A report that involves PT2 but whose best category has under `UNKNOWN_BELOW` probability is
   `unknown` (with its alternatives): a vague "torch.compile hangs" names no stage.
Confidence is calibrated so that it means the probability of being right; below the threshold
fitted in training the verdict is `unsure` and names its top alternatives.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from bot.core.features import Features
from bot.core.records import Classification
from bot.core.ruleset import ContextRule, Pattern, Ruleset
from bot.core.textmodel import LearnedParts, ModelInput

MAX_ALTERNATIVES = 3
DECISIVE_MIN_PRECISION = 0.75  # a decisive rule decides alone only if it was this often right on held-out reports
# The model's best guess below this is no guess (held out: 0 of 6 right): PT2 is involved, no category fits.
UNKNOWN_BELOW = 0.2
MENTIONED_NOT_PT2_CAP = 0.75  # "not a compiler bug" without positive evidence stays a doubt
NOT_PT2_EVIDENCE = ("prose:compiler_not_used", "prose:eager_fails_too", "prose:toolchain_missing",
                    "mention:not_pt2_tooling", "entry:jit", "entry:fx_symbolic_trace", "entry:onnx_legacy")


@dataclass(frozen=True)
class Evidence:
    """What the classifier found, before the decision."""

    by_rules: Classification  # the ranked rules' own verdict
    winner: Pattern | None  # the rule that decided it, if any
    features: Features
    pt2_trace: bool  # the final error passes through, or is raised by, the compiler stack
    probabilities: Mapping[str, float] | None  # the text model's distribution, None without a model
    model_input: ModelInput | None = None  # what the model read, for training and debugging

    @property
    def calls_pt2(self) -> bool:
        """Strong evidence: the code calls the compiler, the error runs through it, or the report
        shows code the compiler generated (an Inductor cache path, a `triton_poi_fused_*` kernel)."""
        return self.pt2_trace or self.features.pt2_entry_point or self.features.has("trace:generated_code")

    @property
    def mentions_pt2(self) -> bool:
        return self.calls_pt2 or self.features.has("mention:pt2")

    @property
    def says_not_pt2(self) -> bool:
        """The reporter says the compiler is not in use, and neither the code nor the error shows it.
        ("Eager fails too" is not enough on its own: on the real test split, deciding by it turned
        one right verdict wrong and fixed none.)"""
        return self.features.says_compiler_not_used and not self.calls_pt2

    @property
    def toolchain_missing(self) -> bool:
        """The report shows a tool or header the compiler needs missing (no C++ compiler, Triton not
        installed, `omp.h` not found): an install problem whichever stage reported it (LABELING.md
        tie-break 7), though its error runs through the compiler. The final error often does not
        say so (a `CalledProcessError` after the compiler's own "fatal error" line)."""
        return self.features.has("prose:toolchain_missing")

    def eager_error_shown(self, not_pt2: str) -> bool:
        """The reporter says it fails without the compiler too, and the error shown bears it out:
        a `not_pt2` rule read its traceback, whose frames never enter the compiler. Either alone
        is a doubt (a comment may name `torch.compile`; tracebacks are often cut), both together
        are the eager bug LABELING.md files as `not_pt2`."""
        return (self.features.says_eager_fails_too and not self.pt2_trace
                and self.winner is not None and self.winner.category == not_pt2)

    @property
    def positively_not_pt2(self) -> bool:
        """Something in the report says the compiler is not the cause (see the module docstring)."""
        if any(self.features.has(name) for name in NOT_PT2_EVIDENCE):
            return True
        return not self.mentions_pt2 and not self.features.has("mention:compiling")


def decide(evidence: Evidence, learned: LearnedParts | None, ruleset: Ruleset) -> Classification:
    """The verdict (pure). Without a trained model the rules alone decide, as before."""
    if learned is None or evidence.probabilities is None:
        return evidence.by_rules
    winner = evidence.winner
    raw = learned.rule_precision.get(winner.name, winner.confidence) if winner is not None else 0.0
    if winner is not None and winner.decisive and raw >= DECISIVE_MIN_PRECISION:
        category, how = winner.category, "rule"
        probabilities = dict(evidence.probabilities)
    else:
        probabilities = candidates(evidence, ruleset.not_pt2)
        category = max(probabilities, key=probabilities.get)
        raw, how = probabilities[category], calibration_curve(category, ruleset)
        if raw / (sum(probabilities.values()) or 1.0) < UNKNOWN_BELOW and evidence.mentions_pt2:
            category = ruleset.fallback  # PT2 is involved and no category fits: the model is nearly uniform
    confidence = learned.calibration(how, raw)
    if category == ruleset.not_pt2 and not evidence.positively_not_pt2:
        confidence = min(confidence, MENTIONED_NOT_PT2_CAP)
    category = refiled(category, evidence.features, ruleset.context)
    return _verdict(evidence, category, confidence, "rule" if how == "rule" else "model", probabilities, learned,
                    ruleset.categories[category].pt2)


def candidates(evidence: Evidence, not_pt2: str) -> dict[str, float]:
    """The model's distribution over the categories the evidence leaves open: code or an error that
    runs through the compiler rules out `not_pt2` unless the reporter says eager fails too, and
    the reporter's own word that the compiler is not in use, or a missing toolchain, rules out
    every PT2 category (a decisive rule on the final error has already had its say)."""
    probabilities = dict(evidence.probabilities)
    if (evidence.says_not_pt2 or evidence.eager_error_shown(not_pt2) or evidence.toolchain_missing) \
            and not_pt2 in probabilities:
        return {not_pt2: probabilities[not_pt2]}
    if evidence.calls_pt2 and not evidence.features.says_eager_fails_too:
        probabilities.pop(not_pt2, None)
    return probabilities


def calibration_curve(category: str, ruleset: Ruleset) -> str:
    """Which calibration curve a model verdict is read on: `not_pt2` verdicts have their own."""
    return "model_not_pt2" if category == ruleset.not_pt2 else "model"


def refiled(category: str, features: Features, context: tuple[ContextRule, ...]) -> str:
    """The first context rule that applies re-files the verdict to the entry point's category."""
    for rule in context:
        if category in rule.when and features.has(rule.feature):
            return rule.category
    return category


def _verdict(evidence: Evidence, category: str, confidence: float, decided_by: str,
             probabilities: Mapping[str, float], learned: LearnedParts, is_pt2: bool) -> Classification:
    ranked = sorted(probabilities.items(), key=lambda item: -item[1])
    alternatives = tuple((c, round(p, 2)) for c, p in ranked[:MAX_ALTERNATIVES])
    if len(ranked) == 1:  # the evidence left one category open: its model share says nothing ("not_pt2 (0%)")
        alternatives = ((category, shown(confidence)),)
    base = evidence.by_rules
    runner_up = next((c for c, _ in ranked if c != category), None)
    return replace(
        base,
        category=category,
        confidence=shown(confidence),
        signature=_with_category(base.signature, category),
        rule=base.rule if decided_by == "rule" else None,
        runner_up=runner_up,
        decided_by=decided_by,
        unsure=confidence < learned.calibration.unsure_below,
        alternatives=alternatives,
        features=tuple(sorted(evidence.features.names)),
        is_pt2=is_pt2,
    )


def shown(probability: float) -> float:
    """A calibrated probability as the verdict states it: two places, never above what was measured.
    Rounding to nearest read a measured 0.897 as 0.90, over the line where a verdict counts as sure."""
    return math.floor(probability * 100 + 1e-9) / 100


def _with_category(signature: str, category: str) -> str:
    """Signatures start with the category; the rest (exception type, message) stays the rules'."""
    rest = signature.split("|", 1)[1] if "|" in signature else signature
    return f"{category}|{rest}"
