"""Scoring the classifier against a labeled corpus (pure).

Besides accuracy and per-category precision/recall it answers the questions a calibrated
confidence has to survive: how right are the verdicts above each threshold, how many cases do they
cover, and how many real PT2 reports were waved off as `not_pt2` with high confidence.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
CONFIDENT_NOT_PT2 = 0.8  # a PT2 report called not_pt2 at least this sure is the worst kind of mistake


@dataclass(frozen=True)
class Outcome:
    case_id: str
    expected: str
    predicted: str
    confidence: float = 1.0
    unsure: bool = False


@dataclass(frozen=True)
class CategoryScore:
    precision: float
    recall: float
    f1: float
    support: int  # how many cases carry this label
    predicted: int  # how many cases were given it

    def to_dict(self) -> dict:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "support": self.support, "predicted": self.predicted}


@dataclass(frozen=True)
class CoveragePoint:
    """Verdicts with confidence >= threshold: what share of all cases they are, and how many are right."""

    threshold: float
    covered: int
    coverage: float
    accuracy: float

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "covered": self.covered, "coverage": self.coverage,
                "accuracy": self.accuracy}


@dataclass(frozen=True)
class EvalReport:
    n: int
    accuracy: float
    per_category: dict[str, CategoryScore]
    confusions: tuple[tuple[str, str, int], ...]  # (expected, predicted, count), most common first
    mistakes: tuple[tuple[str, str, str, float], ...]  # (case id, expected, predicted, confidence)
    coverage: tuple[CoveragePoint, ...] = ()
    confident_not_pt2: int = 0  # PT2 reports called not_pt2 with confidence >= CONFIDENT_NOT_PT2
    unsure: int = 0
    unsure_accuracy: float = 0.0  # how often the top category is right when the verdict says it is unsure
    labels: tuple[str, ...] = ()
    matrix: tuple[tuple[int, ...], ...] = ()  # matrix[i][j]: cases labeled labels[i], predicted labels[j]

    def to_dict(self) -> dict:
        return {
            "accuracy": self.accuracy,
            "n": self.n,
            "per_category": {c: s.to_dict() for c, s in self.per_category.items()},
            "confusions": [{"expected": e, "predicted": p, "count": n} for e, p, n in self.confusions],
            "mistakes": [{"id": i, "expected": e, "predicted": p, "confidence": c} for i, e, p, c in self.mistakes],
            "coverage": [point.to_dict() for point in self.coverage],
            "confident_not_pt2": self.confident_not_pt2,
            "unsure": self.unsure,
            "unsure_accuracy": self.unsure_accuracy,
            "confusion_matrix": {"labels": list(self.labels), "rows": [list(row) for row in self.matrix]},
        }


def _ratio(num: int, den: int) -> float:
    return round(num / den, 4) if den else 0.0


def coverage_curve(outcomes: list[Outcome], thresholds: Iterable[float] = THRESHOLDS) -> tuple[CoveragePoint, ...]:
    points = []
    for threshold in thresholds:
        covered = [o for o in outcomes if o.confidence >= threshold]
        right = sum(1 for o in covered if o.expected == o.predicted)
        points.append(CoveragePoint(threshold, len(covered), _ratio(len(covered), len(outcomes)), _ratio(right, len(covered))))
    return tuple(points)


def evaluate(outcomes: Iterable[Outcome | tuple], not_pt2: str | None = None) -> EvalReport:
    """Score outcomes (or (case id, expected, predicted) triples): accuracy, per-category P/R/F1,
    confusions, the accuracy/coverage curve and, given the id of the not-PT2 verdict, the PT2
    reports it was given with high confidence."""
    outcomes = [o if isinstance(o, Outcome) else Outcome(*o) for o in outcomes]
    labels = sorted({o.expected for o in outcomes} | {o.predicted for o in outcomes})
    per_category = {}
    for label in labels:
        true_pos = sum(1 for o in outcomes if o.expected == o.predicted == label)
        support = sum(1 for o in outcomes if o.expected == label)
        predicted = sum(1 for o in outcomes if o.predicted == label)
        precision, recall = _ratio(true_pos, predicted), _ratio(true_pos, support)
        f1 = round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0
        per_category[label] = CategoryScore(precision, recall, f1, support, predicted)
    wrong = [o for o in outcomes if o.expected != o.predicted]
    mistakes = tuple((o.case_id, o.expected, o.predicted, o.confidence) for o in wrong)
    confusions = tuple((e, p, n) for (e, p), n in Counter((o.expected, o.predicted) for o in wrong).most_common())
    unsure = [o for o in outcomes if o.unsure]
    confident_not_pt2 = sum(1 for o in wrong if o.predicted == not_pt2 and o.expected != not_pt2
                            and o.confidence >= CONFIDENT_NOT_PT2) if not_pt2 else 0
    pairs = Counter((o.expected, o.predicted) for o in outcomes)
    matrix = tuple(tuple(pairs[(e, p)] for p in labels) for e in labels)
    return EvalReport(len(outcomes), _ratio(len(outcomes) - len(wrong), len(outcomes)), per_category, confusions,
                      mistakes, coverage_curve(outcomes), confident_not_pt2, len(unsure),
                      _ratio(sum(1 for o in unsure if o.expected == o.predicted), len(unsure)), tuple(labels), matrix)
