"""What a reduction takes and gives: the predicate and edit types, the statistics and result, and the size
measure (tokens, then characters) every pass is judged by."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Sequence


Predicate = Callable[[str], bool]
PathStep = tuple[str, int | None]
NodePath = tuple[PathStep, ...]
Edit = Callable[[ast.AST], bool]  # mutates a fresh copy of the tree; False = not applicable


@dataclass
class ReduceStats:
    lines_before: int = 0
    lines_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    candidates: int = 0  # candidates generated (including cache hits)
    runs: int = 0  # predicate calls
    cache_hits: int = 0
    sure_failures_skipped: int = 0  # candidates not run: a sure NameError/AttributeError/TypeError (sure_errors)
    shape_changes_skipped: int = 0  # candidates not run: they drop a tensor input, the entry point or an input branch
    failures_recalled: int = 0  # candidates not run: the same rewrite of the same statement failed before
    accepted: int = 0
    rounds: int = 0
    wall_s: float = 0.0
    stop_reason: str = ""
    passes: dict[str, int] = field(default_factory=dict)  # accepted edits per pass
    pass_runs: dict[str, int] = field(default_factory=dict)  # predicate calls per pass (where the runs go)
    pass_seconds: dict[str, float] = field(default_factory=dict)  # wall time per pass
    # (seconds since the start, predicate calls, tokens, pass) at each accepted step: how the size
    # fell with time and which pass made each step, i.e. where a budget's last seconds went
    progress: list[tuple[float, int, int, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Reserve:
    """Time the search leaves for the caller's runs after it: `checks` runs like a candidate's (the
    driver's uncached re-check of its result, the caller's check of the tidied text), each
    estimated by the recent interesting candidates' predicate calls (`check_s` until there is one),
    and `tail_s` more for the caller's own runs (a final classification on another backend)."""
    checks: int = 0
    check_s: float = 0.0
    tail_s: float = 0.0

    def seconds(self, recent_interesting_s: Sequence[float] = ()) -> float:
        """The fastest of the recent interesting calls, not the latest: those ran in parallel
        batches, a re-check runs alone (one slow call in a batch on two cores stopped
        `aot_double_backward_train`'s search 23 s before its budget's end)."""
        check_s = min(recent_interesting_s) if recent_interesting_s else self.check_s
        return self.checks * (check_s + 1) + self.tail_s


@dataclass(frozen=True)
class ReduceResult:
    source: str
    stats: ReduceStats


def count_tokens(source: str) -> int:
    """Significant tokens (no comments, newlines or indentation)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        return sum(1 for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return len(source.split())


def size_key(source: str) -> tuple[int, int]:
    """What "smaller" means: fewer characters, then smaller numbers (so 3 -> 1 counts as progress)."""
    return len(source), sum(int(digits) for digits in re.findall(r"\d+", source))


def format_source(tree: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
