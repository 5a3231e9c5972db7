"""What a report's code and prose say about the compiler stack, as named features (pure).

These are facts, not verdicts: "the repro calls torch.export", "it passes fullgraph=True", "the
reporter says eager fails too". The classifier weighs them with the text model and the rules; the
table of what to look for lives in rules/features.yaml, so adding one is a data change.

A feature is found in the code the report shows (fenced blocks, indented code, inline `code`) and,
for the ones marked `prose`, in the sentences around it. Tracebacks are not code: a frame in
torch/_dynamo says where an error went, which the rules already read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable

import yaml

# Only the head of a log-sized input is read for features (an issue body is at most 64 KiB).
MAX_FEATURE_CHARS = 1 << 20
FRAME_LINE_RE = re.compile(r'^\s*File "[^"]+", line \d+|^File \S+:\d+, in |^\S+\.py:\d+: in ')


@dataclass(frozen=True)
class FeatureRule:
    name: str
    regex: re.Pattern
    prose: bool  # also looked for outside code (phrases people write), not only in code
    unless: re.Pattern | None = None  # a prose line that also matches this does not count
    also: re.Pattern | None = None  # the whole text must also match this somewhere

    def in_prose(self, prose: str) -> bool:
        if self.unless is None:
            return bool(self.regex.search(prose))
        return any(not self.unless.search(prose, line_start(prose, m.start()), line_end(prose, m.end()))
                   for m in self.regex.finditer(prose))


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


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

    def tokens(self) -> list[str]:
        """The features as words for the text model (`__f_entry_compile__`)."""
        return ["__f_" + re.sub(r"\W", "_", name) + "__" for name in sorted(self.names)]


NON_PT2_ENTRIES = frozenset({"entry:jit", "entry:fx_symbolic_trace", "entry:onnx_legacy"})


@lru_cache(maxsize=1)
def load_feature_rules() -> tuple[FeatureRule, ...]:
    """rules/features.yaml, compiled once."""
    text = resources.files("bot.rules").joinpath("features.yaml").read_text(encoding="utf-8")
    doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    rules = []
    for entry in doc["features"]:
        flags = re.I if entry.get("ignore_case") else 0
        unless = re.compile(entry["unless"], flags) if entry.get("unless") else None
        also = re.compile(entry["also"], flags | re.M) if entry.get("also") else None
        rules.append(FeatureRule(entry["name"], re.compile(entry["regex"], flags | re.M), bool(entry.get("prose")),
                                 unless, also))
    return tuple(rules)


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


def extract_features(text: str, rules: Iterable[FeatureRule] | None = None) -> Features:
    """The features of an issue or log head (pure)."""
    text = text[:MAX_FEATURE_CHARS]
    code, prose = split_code_and_prose(text)
    found = set()
    for rule in rules if rules is not None else load_feature_rules():
        if rule.also is not None and not rule.also.search(text):
            continue
        if rule.regex.search(code) or (rule.prose and rule.in_prose(prose)):
            found.add(rule.name)
    return Features(frozenset(found))
