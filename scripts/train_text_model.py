"""Train the text model and fit the confidence calibration (writes bot/rules/text_model.json).

Reads only the train and dev splits of tests/corpus/real/ (never test). Deterministic: the same
corpus and code give byte-identical JSON, and weights on a fixed grid (WEIGHT_STEP) so that the
solver's last-bit noise across machines does not change the .npz either.

1. Each report becomes the tokens the classifier feeds its model (`Classifier.report_evidence`: words,
   dotted names, bigrams, plus the code/prose features and which rules fired).
2. TF-IDF (sublinear tf, l2) and a multinomial logistic regression (scikit-learn). The inverse
   regularisation C is picked by 5-fold cross-validation over train+dev, on the accuracy of the
   *combined* verdict (rules, features and model together, as `classify` decides).
3. Calibration: each train+dev report is predicted by a model trained on the other folds; the
   combined verdict's raw confidence is then mapped to "probability of being right" by isotonic
   regression, one curve per way of deciding (decisive rule / model / nothing touches PT2), with
   Laplace-smoothed blocks so that no confidence reads 1.0 from a handful of cases.
4. The final model is trained on all of train+dev.

    pip install -e '.[train]' && python scripts/train_text_model.py [--check]
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.core import combine  # noqa: E402
from bot.core.classify import Classifier  # noqa: E402
from bot.core.graph_breaks import load_registry  # noqa: E402
from bot.core.ruleset import load_ruleset  # noqa: E402
from bot.core.textmodel import ModelInput, parse_learned  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "real"
OUT = ROOT / "bot" / "rules" / "text_model.json"
OUT_ARRAYS = ROOT / "bot" / "rules" / "text_model.npz"
C_GRID = (100.0,)  # 30-300 were within 0.5% of each other in cross-validation
TITLE_SCALES = (1.0, 1.5)
SIGNAL_SCALES = (0.3,)
# (block, kind, scale): the body's words, the title's words, the rule hits and features
BLOCKS = ()  # set by main() from the grid


def blocks(title_scale: float, signal_scale: float) -> tuple:
    return (("text", "tfidf", 1.0), ("title", "tfidf", title_scale), ("signals", "binary", signal_scale),
            ("title_chars", "tfidf", 1.0), ("body_chars", "tfidf", 1.0))


MIN_DF = {"text": 2, "title": 1, "title_chars": 2, "body_chars": 3}
FOLDS = 5
SEED = 0
MIN_WEIGHT = 0.02  # terms whose weights are all smaller than this are dropped (no measurable effect)
UNSURE_BELOW = 0.5
# Weights and intercepts are stored rounded to this step. The solver's last bits vary with the BLAS
# and the machine (up to ~5e-10 seen); rounding makes a retrain give the same bytes, and --check
# allows one step where noise straddles a rounding boundary. It moves no verdict (tests/eval).
WEIGHT_STEP = 1e-5


def corpus_digest(cases: list[dict]) -> str:
    """What the model was trained on: the cases' URLs and labels (tests check it is current)."""
    return hashlib.sha256("".join(case["url"] + case["category"] for case in cases).encode()).hexdigest()[:16]


def rules_digest() -> str:
    """The rules and features the model's inputs come from (a change to them needs a retrain)."""
    files = ("patterns.yaml", "features.yaml")
    return hashlib.sha256(b"".join((ROOT / "bot" / "rules" / name).read_bytes() for name in files)).hexdigest()[:16]


def load_cases(split: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / f"{split}.jsonl").read_text(encoding="utf-8").splitlines() if line]


def identity(_: list[str]) -> list[str]:
    return _


class BlockModel:
    """The vectorizers of the blocks and the logistic regression over their concatenation."""

    def __init__(self, inputs: list[ModelInput], labels: list[str], c: float):
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.vectorizers = []
        matrices = []
        for name, kind, scale in BLOCKS:
            if kind == "tfidf":
                vectorizer = TfidfVectorizer(analyzer=identity, sublinear_tf=True, min_df=MIN_DF[name],
                                             norm="l2", smooth_idf=True)
            else:
                vectorizer = CountVectorizer(analyzer=identity, binary=True)
            matrices.append(scale * vectorizer.fit_transform([list(i.block(name)) for i in inputs]))
            self.vectorizers.append(vectorizer)
        import scipy.sparse as sparse

        self.model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
        self.model.fit(sparse.hstack(matrices).tocsr(), labels)

    def predict(self, inputs: list[ModelInput]) -> list[dict[str, float]]:
        import scipy.sparse as sparse

        matrices = [scale * v.transform([list(i.block(name)) for i in inputs])
                    for v, (name, _, scale) in zip(self.vectorizers, BLOCKS)]
        rows = self.model.predict_proba(sparse.hstack(matrices).tocsr())
        return [dict(zip(self.model.classes_, map(float, row))) for row in rows]

    def export(self) -> tuple[dict, dict]:
        """(the JSON part: classes, blocks, terms; the arrays: idf, weights per block, intercept)."""
        import numpy as np

        coef, offset, blocks, arrays = self.model.coef_, 0, [], {}
        for vectorizer, (name, kind, scale) in zip(self.vectorizers, BLOCKS):
            kept = [(term, index) for term, index in sorted(vectorizer.vocabulary_.items())
                    if np.abs(coef[:, offset + index]).max() >= MIN_WEIGHT]
            columns = [offset + index for _, index in kept]
            arrays[f"{name}.idf"] = np.array([vectorizer.idf_[i] if kind == "tfidf" else 1.0 for _, i in kept], dtype="<f4")
            arrays[f"{name}.weights"] = rounded(coef[:, columns].T).reshape(-1)
            offset += len(vectorizer.vocabulary_)
            blocks.append({"name": name, "kind": kind, "scale": scale, "terms": [term for term, _ in kept]})
        arrays["intercept"] = rounded(self.model.intercept_)
        return {"classes": list(self.model.classes_), "blocks": blocks}, arrays


def rounded(values):
    """float32 values on the WEIGHT_STEP grid (what is stored)."""
    import numpy as np

    return np.ascontiguousarray(np.round(np.asarray(values, dtype=np.float64) / WEIGHT_STEP) * WEIGHT_STEP, dtype="<f4")


def same_arrays(stored: bytes, trained: dict) -> tuple[bool, float]:
    """(the stored .npz holds the trained arrays to within one WEIGHT_STEP, the largest difference)."""
    import numpy as np

    with np.load(io.BytesIO(stored), allow_pickle=False) as old:
        if sorted(old.files) != sorted(trained) or any(old[k].shape != trained[k].shape for k in trained):
            return False, float("inf")
        largest = max((float(np.abs(old[k].astype(np.float64) - trained[k]).max(initial=0.0)) for k in trained),
                      default=0.0)
    return largest <= WEIGHT_STEP * 1.01, largest


def npz_bytes(arrays: dict) -> bytes:
    """An .npz numpy.load reads, byte-identical for the same arrays (fixed member order and dates)."""
    import numpy as np

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, arrays[name], allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    return out.getvalue()


def rule_precision(cases: list[dict], evidences: list[combine.Evidence]) -> dict[str, float]:
    """Per decisive rule: how often its category was the hand label (Laplace-smoothed towards the
    rule's own stated confidence, weight 2)."""
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    prior = {}
    for case, evidence in zip(cases, evidences):
        winner = evidence.winner
        if winner is not None and winner.decisive:
            hits[winner.name][0] += winner.category == case["category"]
            hits[winner.name][1] += 1
            prior[winner.name] = winner.confidence
    return {name: round((right + 2 * prior[name]) / (total + 2), 4) for name, (right, total) in sorted(hits.items())}


def smoothed_isotonic(raw: list[float], right: list[int]) -> list[list[float]]:
    """Isotonic fit of correctness on raw confidence, each block's rate Laplace-smoothed, as points."""
    import numpy as np
    from sklearn.isotonic import IsotonicRegression

    if len(raw) < 5:
        return []
    order = np.argsort(raw, kind="stable")
    x, y = np.array(raw)[order], np.array(right, dtype=float)[order]
    fitted = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit_transform(x, y)
    points, start = [], 0
    for end in range(1, len(x) + 1):
        if end == len(x) or fitted[end] != fitted[start]:
            block = y[start:end]
            rate = (block.sum() + 1) / (len(block) + 2)
            points.append([round(float(x[start]), 4), round(float(rate), 4)])
            if end - start > 1:
                points.append([round(float(x[end - 1]), 4), round(float(rate), 4)])
            start = end
    best = 0.0
    for point in points:  # keep it monotone after smoothing
        best = point[1] = max(best, point[1])
    return points


def combined_outcomes(cases, evidences, probabilities, learned_stub, ruleset):
    """(curve, raw confidence, right, verdict) of each case's combined verdict, with identity calibration."""
    outcomes = []
    for case, evidence, probs in zip(cases, evidences, probabilities):
        verdict = combine.decide(combine.Evidence(evidence.by_rules, evidence.winner, evidence.features,
                                                  evidence.pt2_trace, probs), learned_stub, ruleset)
        how = "rule" if verdict.decided_by == "rule" else combine.calibration_curve(verdict.category, ruleset)
        outcomes.append((how, verdict.confidence, int(verdict.category == case["category"]), verdict.category))
    return outcomes


def stub(model_json: dict, precisions: dict[str, float]):
    return parse_learned({"model": model_json, "calibration": {"curves": {}, "unsure_below": UNSURE_BELOW},
                          "rule_precision": precisions}, {"intercept": [0.0]})


def cross_validated(cases, inputs, evidences, precisions, c, ruleset) -> list[tuple]:
    from sklearn.model_selection import StratifiedKFold

    labels = [case["category"] for case in cases]
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    counts = Counter(labels)
    strata = [label if counts[label] >= FOLDS else "_rare" for label in labels]
    probabilities = [None] * len(cases)
    for train_index, held_index in folds.split(inputs, strata):
        model = BlockModel([inputs[i] for i in train_index], [labels[i] for i in train_index], c)
        for index, probs in zip(held_index, model.predict([inputs[i] for i in held_index])):
            probabilities[index] = probs
    learned = stub({"classes": ["x"], "blocks": []}, precisions)  # decide() reads no weights
    return combined_outcomes(cases, evidences, probabilities, learned, ruleset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if text_model.json is not what training gives")
    parser.add_argument("--errors", action="store_true",
                        help="also list the cross-validated mistakes on train+dev (each predicted by a model that never saw it)")
    args = parser.parse_args()
    cases = load_cases("train") + load_cases("dev")
    classifier = Classifier(load_ruleset(), load_registry(), learned=None)
    evidences = [classifier.report_evidence(case["body"].encode("utf-8", "surrogateescape")) for case in cases]
    inputs = [evidence.model_input for evidence in evidences]
    precisions = rule_precision(cases, evidences)
    ruleset = classifier.ruleset

    global BLOCKS
    scores = {}
    for c in C_GRID:
        for title_scale in TITLE_SCALES:
            for signal_scale in SIGNAL_SCALES:
                BLOCKS = blocks(title_scale, signal_scale)
                outcomes = cross_validated(cases, inputs, evidences, precisions, c, ruleset)
                scores[(c, title_scale, signal_scale)] = sum(o[2] for o in outcomes) / len(outcomes)
                print(f"C={c:g} title={title_scale:g} signals={signal_scale:g}: cross-validated combined accuracy "
                      f"{scores[(c, title_scale, signal_scale)]:.3f}", file=sys.stderr)
    best = max(scores, key=lambda k: (round(scores[k], 4), -k[0], k[1], -k[2]))
    best_c = best[0]
    BLOCKS = blocks(best[1], best[2])
    outcomes = cross_validated(cases, inputs, evidences, precisions, best_c, ruleset)

    if args.errors:
        for case, (how, raw, right, verdict) in zip(cases, outcomes):
            if not right:
                print(f"{case['category'][:16]:16s} -> {verdict[:16]:16s} {how[:6]} {raw:.2f}  {case['url'][19:]}  "
                      f"{case['title'][:70]}", file=sys.stderr)
    curves = {}
    for how in ("rule", "model", "model_not_pt2"):
        picked = [(raw, right) for h, raw, right, _ in outcomes if h == how]
        curves[how] = smoothed_isotonic([p[0] for p in picked], [p[1] for p in picked])
    model = BlockModel(inputs, [case["category"] for case in cases], best_c)
    model_json, arrays = model.export()
    digest = corpus_digest(cases)
    result = {
        "model": model_json,
        "calibration": {"curves": curves, "unsure_below": UNSURE_BELOW},
        "rule_precision": precisions,
        "trained_on": {"splits": ["train", "dev"], "cases": len(cases), "corpus_sha256_16": digest, "C": best_c,
                       "title_scale": best[1], "signal_scale": best[2], "rules_sha256_16": rules_digest(),
                       "cross_validated_accuracy": round(scores[best], 4), "folds": FOLDS},
    }
    text = json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n"
    packed = npz_bytes(arrays)
    if args.check:
        same_json = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        same_bytes = OUT_ARRAYS.is_file() and OUT_ARRAYS.read_bytes() == packed
        close, largest = same_arrays(OUT_ARRAYS.read_bytes(), arrays) if OUT_ARRAYS.is_file() else (False, float("inf"))
        print(f"check: text_model.json {'identical' if same_json else 'DIFFERS'}; text_model.npz "
              f"{'identical' if same_bytes else f'largest difference {largest:.2g}'}", file=sys.stderr)
        sys.exit(0 if same_json and (same_bytes or close) else 1)
    OUT.write_text(text, encoding="utf-8")
    OUT_ARRAYS.write_bytes(packed)
    by_how = Counter(o[0] for o in outcomes)
    terms = sum(len(block["terms"]) for block in result["model"]["blocks"])
    print(f"wrote {OUT.relative_to(ROOT)}: {terms} terms, C={best_c:g}, "
          f"cross-validated accuracy {scores[best]:.3f}; decided by {dict(by_how)}")


if __name__ == "__main__":
    main()
