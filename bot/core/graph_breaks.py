"""Dynamo's graph-break registry: GBxxxx ids, their explanations and hints.

torch ships `torch/_dynamo/graph_break_registry.json`; every `unimplemented()` call site has an
entry with a `Gb_type` (the first line of the Unsupported message), an explanation and hints. We
read the installed torch's copy (it matches the torch that produced the error) without importing
torch, and fall back to the copy vendored in `bot/rules/` (from torch 2.13, BSD-licensed).
"""
from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping

GB_ID_RE = re.compile(r"\bGB(\d{4})\b", re.IGNORECASE)
PLACEHOLDER_RE = re.compile(r"\\\{[^{}]*\\\}")
STRING_LITERAL_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


def tidy_registry_text(text: str) -> str:
    """Some registry entries hold the Python source of the message ("a " "b" + var): keep the words."""
    stripped = text.strip()
    if not stripped.startswith(('"', "'")):
        return stripped
    pieces = [a or b for a, b in STRING_LITERAL_RE.findall(stripped)]
    return "".join(pieces).strip() or stripped


@dataclass(frozen=True)
class GraphBreakEntry:
    id: str
    gb_type: str
    explanation: str
    hints: tuple[str, ...]


class GraphBreakRegistry:
    """Lookups by id, by `Gb_type` text and by explanation text (pure once built)."""

    def __init__(self, entries: Iterable[GraphBreakEntry], source: str = ""):
        self.by_id: dict[str, GraphBreakEntry] = {e.id: e for e in entries}
        self.by_type: dict[str, str] = {}
        for entry in self.by_id.values():
            self.by_type.setdefault(entry.gb_type.strip(), entry.id)
        self.source = source
        self._explanations: list[tuple[re.Pattern, str]] | None = None

    @classmethod
    def from_json(cls, data: Mapping, source: str = "") -> "GraphBreakRegistry":
        entries = []
        for gb_id, versions in data.items():
            if not versions:
                continue
            latest = versions[0]  # torch lists the current wording first
            entries.append(GraphBreakEntry(
                id=gb_id,
                gb_type=tidy_registry_text(str(latest.get("Gb_type", ""))),
                explanation=tidy_registry_text(str(latest.get("Explanation", ""))),
                hints=tuple(tidy_registry_text(str(h)) for h in latest.get("Hints", ())),
            ))
        return cls(entries, source)

    def get(self, gb_id: str | None) -> GraphBreakEntry | None:
        return self.by_id.get(gb_id.upper()) if gb_id else None

    def find_id(self, lines: Iterable[str]) -> str | None:
        """The GB id a text carries: literally (GB0170, .../gb0170.html), or by its Gb_type or explanation."""
        lines = list(lines)
        for line in lines:
            match = GB_ID_RE.search(line)
            if match and f"GB{match.group(1)}" in self.by_id:
                return f"GB{match.group(1)}"
        for line in lines:
            gb_type = _strip_unsupported_prefix(line)
            if gb_type in self.by_type:
                return self.by_type[gb_type]
        for line in lines:
            explanation = line.strip().removeprefix("Explanation:").strip()
            if explanation and line.strip().startswith("Explanation:"):
                for pattern, gb_id in self._explanation_patterns():
                    if pattern.fullmatch(explanation):
                        return gb_id
        return None

    def _explanation_patterns(self) -> list[tuple[re.Pattern, str]]:
        if self._explanations is None:
            self._explanations = []
            for entry in self.by_id.values():
                if entry.explanation:
                    regex = PLACEHOLDER_RE.sub(".*", re.escape(entry.explanation.strip()))
                    self._explanations.append((re.compile(regex, re.DOTALL), entry.id))
        return self._explanations


def _strip_unsupported_prefix(line: str) -> str:
    text = line.strip()
    for prefix in ("torch._dynamo.exc.Unsupported:", "Unsupported:"):
        if text.startswith(prefix):
            return text[len(prefix):].strip()
    return text


def installed_torch_registry_path() -> Path | None:
    """Where the installed torch keeps its registry, found without importing torch (slow)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "_dynamo" / "graph_break_registry.json"
        if path.is_file():
            return path
    return None


def load_registry(path: str | Path | None = None) -> GraphBreakRegistry:
    """The registry at `path`, else the installed torch's, else the vendored copy."""
    candidates = [Path(path)] if path else [installed_torch_registry_path()]
    for candidate in candidates:
        if candidate is not None:
            try:
                return GraphBreakRegistry.from_json(json.loads(candidate.read_text(encoding="utf-8")), str(candidate))
            except (OSError, ValueError):
                if path:
                    raise
    vendored = resources.files("bot.rules") / "graph_break_registry.json"
    return GraphBreakRegistry.from_json(json.loads(vendored.read_text(encoding="utf-8")), "vendored")
