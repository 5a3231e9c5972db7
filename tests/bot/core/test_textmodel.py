"""The learned text model: its tokenizer, its stored weights, and that it is current."""
from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from bot.core.textmodel import Calibration, char_ngrams, load_learned, read_npz, tokens
from tests import paths

ROOT = paths.ROOT


def test_tokens_are_words_dotted_names_and_bigrams_without_urls_mentions_or_numbers():
    found = tokens("Seeing torch._dynamo.exc.Unsupported at https://x.y/z, cc @alice 0x7f 42 times")
    assert "torch._dynamo.exc.unsupported" in found and "unsupported" in found
    assert "seeing torch" in found  # a bigram
    assert not any("alice" in t or "x.y" in t or "0x7f" in t or "42" in t for t in found)


def test_char_ngrams_pad_each_word_like_scikit_learns_char_wb():
    assert char_ngrams("Kernal  ok", 3, 4) == [" ke", "ker", "ern", "rna", "nal", "al ", " ker", "kern", "erna", "rnal", "nal ",
                                               " ok", "ok ", " ok "]


def test_npz_arrays_read_without_numpy_match_what_numpy_wrote():
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(6, dtype="<f4").reshape(2, 3), b=np.array([1.5, -2.25], dtype="<f8"))
    arrays = read_npz(buffer.getvalue())
    assert list(arrays["a"]) == [0, 1, 2, 3, 4, 5] and list(arrays["b"]) == [1.5, -2.25]


def test_npz_refuses_what_it_cannot_read():
    buffer = io.BytesIO()
    np.savez(buffer, a=np.array(["text"]))
    with pytest.raises(ValueError, match="float arrays"):
        read_npz(buffer.getvalue())


def test_calibration_is_piecewise_linear_and_monotone():
    curve = Calibration({"model": ((0.2, 0.3), (0.6, 0.7), (0.9, 0.95))}, unsure_below=0.5)
    assert curve("model", 0.1) == 0.3 and curve("model", 0.4) == pytest.approx(0.5) and curve("model", 0.99) == 0.95
    assert curve("rule", 0.8) == 0.8  # no curve: the raw value


def test_the_stored_model_is_trained_on_the_current_corpus_and_rules():
    """A stale model (the corpus' labels or the rules changed since) fails here: retrain with
    `pip install -e '.[train]' && python scripts/train_text_model.py`."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import train_text_model as training  # scikit-learn is imported only when training

    learned = load_learned()
    cases = training.load_cases("train") + training.load_cases("dev")
    assert learned.trained_on["corpus_sha256_16"] == training.corpus_digest(cases)
    assert learned.trained_on["rules_sha256_16"] == training.rules_digest()


def test_the_stored_model_covers_every_category_it_may_predict():
    learned = load_learned()
    categories = json.loads((ROOT / "bot" / "rules" / "text_model.json").read_text())["model"]["classes"]
    assert set(learned.model.classes) == set(categories)
    assert "not_pt2" in categories and "graph_break" in categories
