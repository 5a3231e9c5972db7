"""What a report's code and prose say about the compiler stack, as named features (pure).

These are facts, not verdicts: "the repro calls torch.export", "it passes fullgraph=True", "the
reporter says eager fails too". The classifier weighs them with the text model and the rules; the
table of what to look for lives in rules/features.yaml (read by the Ruleset), so adding one is a
data change.

A feature is found in the code the report shows (fenced blocks, indented code, inline `code`) and,
for the ones marked `prose`, in the sentences around it. Tracebacks are not code: a frame in
torch/_dynamo says where an error went, which the rules already read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from bot.core.tables import FeatureRule

# Only the head of a log-sized input is read for features (an issue body is at most 64 KiB).
MAX_FEATURE_CHARS = 1 << 20
FRAME_LINE_RE = re.compile(r'^\s*File "[^"]+", line \d+|^File \S+:\d+, in |^\S+\.py:\d+: in ')


@dataclass(frozen=True)
class Features:
    """The named features of one text; `names` is what the model and the decision read."""

    names: frozenset[str]

    def has(self, name: str) -> bool:
        return name in self.names

    @property
    def pt2_entry_point(self) -> bool:
        """The report uses the compiler: torch.compile, torch.export or AOTInductor."""
        return any(name.startswith("entry:") and name not in NON_PT2_ENTRIES for name in self.names)

    @property
    def says_eager_fails_too(self) -> bool:
        return "prose:eager_fails_too" in self.names

    @property
    def says_compiler_not_used(self) -> bool:
        return "prose:compiler_not_used" in self.names

    def tokens(self) -> list[str]:
        """The features as words for the text model (`__f_entry_compile__`)."""
        return ["__f_" + re.sub(r"\W", "_", name) + "__" for name in sorted(self.names)]


NON_PT2_ENTRIES = frozenset({"entry:jit", "entry:fx_symbolic_trace", "entry:onnx_legacy"})


def split_code_and_prose(text: str) -> tuple[str, str]:
    """(code, prose) of a markdown text: fenced and indented blocks and inline `spans` are code;
    traceback frame lines are neither (they say where an error went, not what the user wrote)."""
    code, prose, fence = [], [], None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            elif not FRAME_LINE_RE.match(line):
                code.append(line)
            continue
        opening = re.match(r"(`{3,}|~{3,})", stripped)
        if opening:
            fence = opening.group(1)
            continue
        if line.startswith(("    ", "\t")) and not FRAME_LINE_RE.match(line):
            code.append(line)
            continue
        code.extend(re.findall(r"`([^`\n]+)`", line))
        prose.append(line)
    return "\n".join(code), "\n".join(prose)


def extract_features(text: str, rules: Iterable[FeatureRule]) -> Features:
    """The features of an issue or log head (pure); `rules` is the ruleset's feature table."""
    text = text[:MAX_FEATURE_CHARS]
    code, prose = split_code_and_prose(text)
    found = set()
    for rule in rules:
        if rule.also is not None and not rule.also.search(text):
            continue
        if rule.regex.search(code) or (rule.prose and rule.in_prose(prose)):
            found.add(rule.name)
    return Features(frozenset(found))
