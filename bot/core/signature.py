"""Failure signatures: the same failure gives the same string on any machine (pure).

Used to answer "is the minimized repro still failing the same way?" and to dedupe reports, so
it keeps what identifies the failure (category, exception type, message words, GB id) and drops
what varies between runs and machines: addresses, paths, hashes, line numbers, sizes and ids, and
the names of the user's variables in Dynamo's guard sources.
"""
from __future__ import annotations

import re

from bot.core.graph_breaks import GB_ID_RE
from bot.core.logtext import clean_line

TORCH_LOG_PREFIX_RE = re.compile(r"^[IWEVDC]\d{4} [\d:.]+ \d+ \S+\] (?:\[[^\]]*\] )*")
_SUBSTITUTIONS = (
    (re.compile(r"https?://\S+"), "<url>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    # Dynamo's guard sources name the user's own variables (`L['x']`, `G['model']`, `L['args'][0]`):
    # how the input was named or passed is not part of the failure (`torch.compile(Net())(x)` reads
    # `L['x']`, `torch.compile(nn.Linear(2, 1))(x)` reads `L['args'][0]`)
    (re.compile(r"\b([LG])\[(['\"])[^'\"\]]*\2\](?:\[\d+\])*"), r"\1[<name>]"),
    # generated code: /tmp/torchinductor_user/ab/cabc...py, or any cache dir's c<hash>.main.cpp
    (re.compile(r"\S*torchinductor_[^/\s]*/(?:\w+/)*\w+((?:\.\w+)+)"), r"<generated>\1"),
    (re.compile(r"[^\s\"']*/c[a-z0-9]{40,}((?:\.\w+)+)"), r"<generated>\1"),
    # torch sources: keep the path inside torch, drop where torch is installed
    (re.compile(r"(?<![\w.])(?:/[^\s/:'\"()]+)*/(torch/[^\s:'\"()]+)"), r"\1"),
    # any other absolute path: keep the file name
    (re.compile(r"(?<![\w.<])(?:/[^\s/:'\"()]+)+/([^\s/:'\"()]+)"), r"\1"),
    (re.compile(r"\b[0-9a-z]{20,}\b"), "<hash>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"(\.\w+):\d+(?::\d+)?"), r"\1"),  # file.py:123[:45]
    (re.compile(r"\bline \d+"), "line"),
    (re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
)
MAX_SIGNATURE_TEXT = 160


def normalize(text: str) -> str:
    """Drop machine- and run-specific detail from one line of error text."""
    text = TORCH_LOG_PREFIX_RE.sub("", clean_line(text)).strip()
    graph_break_ids = sorted({f"GB{digits}" for digits in GB_ID_RE.findall(text)})
    text = GB_ID_RE.sub("GB", text)
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    text = text.strip()[:MAX_SIGNATURE_TEXT]
    return f"{text} [{','.join(graph_break_ids)}]" if graph_break_ids else text


def short_type(type_name: str | None) -> str:
    """`torch._dynamo.exc.Unsupported` -> `Unsupported`: the module path moves between releases."""
    return type_name.rsplit(".", 1)[-1] if type_name else "-"


def make_signature(category: str, type_name: str | None, text: str, detail: str | None = None) -> str:
    """`category|Type|normalized text[|normalized detail]`."""
    parts = [category, short_type(type_name), normalize(text)]
    if detail:
        parts.append(normalize(detail))
    return "|".join(parts)
