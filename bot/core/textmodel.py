"""The learned text model: TF-IDF over a report's words, a linear layer, a softmax (pure).

It reads what the rules cannot: the title and the prose ("twice as slow as eager", "the outputs of
the compiled model differ", "it keeps recompiling"), and it learns how far to trust the weak
signals (a line-scope rule hit, a code feature) from real reports. It is trained by
`scripts/train_text_model.py` with scikit-learn on the train and dev splits of tests/corpus/real/ and
stored without pickle: rules/text_model.json holds the classes, terms, calibration and provenance
(reviewable), rules/text_model.npz the float arrays (`numpy.load` reads it; so does `read_npz`). Inference needs no
scikit-learn and no numpy: one report has a few hundred distinct terms, so a dict lookup per term
is faster than importing either.

`tokens()` is the single tokenizer: training passes it to scikit-learn as the analyzer, so the
words the model was trained on are exactly the words it sees here.
"""
from __future__ import annotations

import ast
import io
import json
import math
import re
import sys
import zipfile
from array import array
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping, Sequence

URL_RE = re.compile(r"https?://\S+")
MENTION_RE = re.compile(r"(?<![\w.])@[\w-]+")
HEX_RE = re.compile(r"\b0x[0-9a-f]+\b")
WORD_RE = re.compile(r"[a-z_][a-z0-9_]*")
DOTTED_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+")
MAX_MODEL_CHARS = 64 << 10  # the model reads the head of an input: an issue body is at most 64 KiB
STOP_WORDS = frozenset("""a an and are as at be but by for from has have i if in into is it its of on or so
that the their then there these this to was we were will with you your""".split())


def tokens(text: str, extra: Iterable[str] = ()) -> list[str]:
    """Words, dotted names (`torch._dynamo.exc.unsupported`) and word bigrams of `text`, lower-cased,
    without URLs, @mentions and numbers; `extra` tokens (features, rule hits) are appended as is."""
    text = MENTION_RE.sub(" ", URL_RE.sub(" ", text[:MAX_MODEL_CHARS].lower()))
    text = HEX_RE.sub(" ", text)
    words = [w for w in WORD_RE.findall(text) if len(w) > 1 and w not in STOP_WORDS]
    found = words + DOTTED_RE.findall(text)
    found.extend(f"{a} {b}" for a, b in zip(words, words[1:]))
    found.extend(extra)
    return found


WHITESPACE_RE = re.compile(r"\s\s+")
MAX_BODY_CHARS_FOR_NGRAMS = 4000  # character n-grams of the report's head only: its title and opening


def char_ngrams(text: str, low: int = 3, high: int = 5) -> list[str]:
    """Character n-grams inside word boundaries, each word padded with a space (scikit-learn's
    `char_wb`, written out so training and inference share it). They catch what word tokens miss:
    misspellings ("Kernal"), inflections ("recompiling", "recompiles"), joined names."""
    found = []
    for word in WHITESPACE_RE.sub(" ", text.lower()).split():
        padded = f" {word} "
        for n in range(low, high + 1):
            if len(padded) < n:
                break
            found.extend(padded[i:i + n] for i in range(len(padded) - n + 1))
    return found


@dataclass(frozen=True)
class ModelInput:
    """What the model reads of one report, in blocks weighted apart (so that a few strong signals
    are not drowned by a long log, and the title counts as much as the whole body)."""

    text: tuple[str, ...]  # tokens() of the body (title included)
    title: tuple[str, ...]  # tokens() of the title alone
    signals: tuple[str, ...]  # rule hits and features: `__r_cpp_compile_error__`, `__f_entry_compile__`
    title_chars: tuple[str, ...] = ()  # char_ngrams() of the title
    body_chars: tuple[str, ...] = ()  # char_ngrams() of the report's head

    def block(self, name: str) -> tuple[str, ...]:
        return getattr(self, name)


@dataclass(frozen=True)
class Block:
    """One feature block: `tfidf` (sublinear tf * idf, l2-normalised) or `binary` (present or not),
    times `scale`. `index` maps a term to its row; `idf` and the flat `weights` (row-major, one
    weight per class) hold the rest, as plain lists: this loads in a fraction of a dict per term."""

    name: str
    kind: str
    scale: float
    index: Mapping[str, int]
    idf: Sequence[float]
    weights: Sequence[float]

    def values(self, words: Iterable[str]) -> dict[int, float]:
        counts: dict[int, int] = {}
        for word in words:
            row = self.index.get(word)
            if row is not None:
                counts[row] = counts.get(row, 0) + 1
        if self.kind == "binary":
            return {row: self.scale for row in counts}
        weights = {row: (1.0 + math.log(n)) * self.idf[row] for row, n in counts.items()}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        return {row: self.scale * v / norm for row, v in weights.items()}


@dataclass(frozen=True)
class TextModel:
    classes: tuple[str, ...]
    blocks: tuple[Block, ...]
    intercept: tuple[float, ...]

    def scores(self, given: ModelInput) -> dict[str, float]:
        """Class probabilities: the softmax of the blocks' linear scores."""
        logits = list(self.intercept)
        width = len(self.classes)
        for block in self.blocks:
            weights = block.weights
            for row, value in block.values(given.block(block.name)).items():
                base = row * width
                for index in range(width):
                    logits[index] += value * weights[base + index]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps)}

    @classmethod
    def from_dict(cls, data: Mapping, arrays: Mapping[str, Sequence[float]]) -> "TextModel":
        """The model from its JSON (classes, blocks, terms) and its arrays (`<block>.idf`,
        `<block>.weights` row-major per term, `intercept`)."""
        classes = tuple(data["classes"])
        blocks = []
        for raw in data["blocks"]:
            terms, idf, weights = raw["terms"], arrays[f"{raw['name']}.idf"], arrays[f"{raw['name']}.weights"]
            if (len(idf) != len(terms) or len(weights) != len(terms) * len(classes)
                    or raw["name"] not in ModelInput.__dataclass_fields__ or raw["kind"] not in ("tfidf", "binary")):
                raise ValueError(f"text model: block {raw['name']!r} does not fit its {len(classes)} classes")
            blocks.append(Block(raw["name"], raw["kind"], float(raw["scale"]), {t: i for i, t in enumerate(terms)},
                                idf, weights))
        intercept = tuple(float(x) for x in arrays["intercept"])
        if len(intercept) != len(classes):
            raise ValueError("text model: intercept does not match its classes")
        return cls(classes, tuple(blocks), intercept)


@dataclass(frozen=True)
class Calibration:
    """Maps a raw confidence to the probability of being right, piecewise linear through points
    fitted on held-out predictions (isotonic regression), one curve per way of deciding."""

    curves: Mapping[str, tuple[tuple[float, float], ...]]  # "rule" | "model" -> ((raw, calibrated), ...)
    unsure_below: float

    def __call__(self, how: str, raw: float) -> float:
        points = self.curves.get(how)
        if not points:
            return raw
        if raw <= points[0][0]:
            return points[0][1]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if raw <= x1:
                return y0 + (y1 - y0) * ((raw - x0) / (x1 - x0) if x1 > x0 else 1.0)
        return points[-1][1]

    @classmethod
    def from_dict(cls, data: Mapping) -> "Calibration":
        curves = {k: tuple((float(x), float(y)) for x, y in v) for k, v in data.get("curves", {}).items()}
        return cls(curves, float(data.get("unsure_below", 0.5)))


@dataclass(frozen=True)
class LearnedParts:
    model: TextModel
    calibration: Calibration
    rule_precision: Mapping[str, float]  # deciding rule -> precision measured on held-out cases
    trained_on: Mapping  # what the training script recorded: corpus, split sizes, hyper-parameters


def parse_learned(data: Mapping, arrays: Mapping[str, Sequence[float]]) -> LearnedParts:
    return LearnedParts(TextModel.from_dict(data["model"], arrays), Calibration.from_dict(data.get("calibration", {})),
                        {k: float(v) for k, v in data.get("rule_precision", {}).items()}, data.get("trained_on", {}))


def read_npz(data: bytes) -> dict[str, array]:
    """The float arrays of an .npz (NumPy's zip of .npy files), read without NumPy: each member's
    header says its dtype and shape, and its data is a flat little-endian float32 or float64 run."""
    arrays = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for member in archive.namelist():
            raw = archive.read(member)
            if raw[:6] != b"\x93NUMPY":
                raise ValueError(f"{member}: not an .npy array")
            major = raw[6]
            length_size = 2 if major == 1 else 4
            header_len = int.from_bytes(raw[8:8 + length_size], "little")
            start = 8 + length_size
            header = ast.literal_eval(raw[start:start + header_len].decode("latin1"))
            codes = {"<f4": "f", "<f8": "d"}
            if header["descr"] not in codes or header["fortran_order"]:
                raise ValueError(f"{member}: only C-ordered little-endian float arrays are read ({header})")
            values = array(codes[header["descr"]])
            values.frombytes(raw[start + header_len:])
            if sys.byteorder != "little":
                values.byteswap()
            arrays[member[:-4] if member.endswith(".npy") else member] = values
    return arrays


@lru_cache(maxsize=1)
def load_learned() -> LearnedParts | None:
    """rules/text_model.json with its weights in rules/text_model.npz, or None when no model has
    been trained (the rules alone then decide)."""
    rules = resources.files("bot.rules")
    if not rules.joinpath("text_model.json").is_file():
        return None
    return parse_learned(json.loads(rules.joinpath("text_model.json").read_text(encoding="utf-8")),
                         read_npz(rules.joinpath("text_model.npz").read_bytes()))
