"""Scoring the classifier against a labeled corpus (pure)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable


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
class EvalReport:
    n: int
    accuracy: float
    per_category: dict[str, CategoryScore]
    confusions: tuple[tuple[str, str, int], ...]  # (expected, predicted, count), most common first
    mistakes: tuple[tuple[str, str, str], ...]  # (case id, expected, predicted)

    def to_dict(self) -> dict:
        return {
            "accuracy": self.accuracy,
            "n": self.n,
            "per_category": {c: s.to_dict() for c, s in self.per_category.items()},
            "confusions": [{"expected": e, "predicted": p, "count": n} for e, p, n in self.confusions],
            "mistakes": [{"id": i, "expected": e, "predicted": p} for i, e, p in self.mistakes],
        }


def _ratio(num: int, den: int) -> float:
    return round(num / den, 4) if den else 0.0


def evaluate(outcomes: Iterable[tuple[str, str, str]]) -> EvalReport:
    """Score (case id, expected, predicted) triples: accuracy, per-category P/R/F1, confusions."""
    outcomes = list(outcomes)
    labels = sorted({e for _, e, _ in outcomes} | {p for _, _, p in outcomes})
    per_category = {}
    for label in labels:
        true_pos = sum(1 for _, e, p in outcomes if e == p == label)
        support = sum(1 for _, e, _ in outcomes if e == label)
        predicted = sum(1 for _, _, p in outcomes if p == label)
        precision, recall = _ratio(true_pos, predicted), _ratio(true_pos, support)
        f1 = round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0
        per_category[label] = CategoryScore(precision, recall, f1, support, predicted)
    mistakes = tuple((i, e, p) for i, e, p in outcomes if e != p)
    confusions = tuple((e, p, n) for (e, p), n in Counter((e, p) for _, e, p in mistakes).most_common())
    correct = len(outcomes) - len(mistakes)
    return EvalReport(len(outcomes), _ratio(correct, len(outcomes)), per_category, confusions, mistakes)
