"""Text -> Classification (pure: values in, values out).

The decision in four steps, each a small function:
1. `Scanner.scan` finds the interesting lines of the whole input in one pass (scan.py).
2. `final_chain` reads the final error: the last traceback chain, pytest failure or bare
   exception line that surfaced last (tracebacks.py does the parsing).
3. `facts` states what else holds (is the compiler in the frames, is the text about PT2 at all).
4. The ranked patterns (rules/patterns.yaml) are tried against their scope; the highest
   priority match decides, and the rest only inform confidence and the runner-up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable

import re2

from .extract import code_blocks
from .graph_breaks import GraphBreakRegistry
from .logtext import clean_line, decode
from .records import Classification, Evidence, ExceptionChain
from .ruleset import Pattern, Ruleset
from .scan import ScanResult, Scanner, count_newlines
from .signature import make_signature
from .tracebacks import NumberedLine, parse_bare_exception, parse_pytest_failure, parse_python_chain

PT2_FRAME_RE = re.compile(
    r"torch/(?:_dynamo|_inductor|_functorch|_export|export|_higher_order_ops|fx/experimental|_subclasses/fake_tensor"
    r"|_prims|_refs|_decomp|compiler)/|torchinductor_|/torch/_(?:dynamo|inductor)|torch/__init__\.py in compile$"
)
# An exception head (type and first message line) that names the compiler stack.
PT2_HEAD_RE = re.compile(r"torch\.(?:_dynamo|_inductor|_export|export|fx\.experimental|compile)|Unsupported|BackendCompilerFailed"
                         r"|InductorError|TorchDynamo|FailOnRecompileLimitHit|[Dd]ynamo|[Ii]nductor")
PT2_CODE_RE = re.compile(r"torch\.compile|torch\._dynamo|torch\._inductor|torch\.export|aoti_|@torch\.compile|compiled")
COMPILE_ERROR_LINE_RE = re.compile(r"(?:^|\s)(?:[^\s:]+:\d+:\d+: )?(?:fatal )?error: .+")
GRAPH_BREAK_ID_CATEGORIES = ("graph_break", "recompilation", "dynamic_shapes", "export_failure", "unknown")
MAX_REGION_BYTES = 4 << 20
MAX_EVIDENCE = 8
CODE_SCOPE_MAX_BYTES = 2 << 20


@dataclass(frozen=True)
class Match:
    pattern: Pattern
    evidence: tuple[Evidence, ...]


@dataclass
class Facts:
    """What holds of one input besides the pattern matches; pt2_context is computed on demand."""

    chain: ExceptionChain | None
    _pt2_mention: Callable[[], bool] = field(repr=False)
    code: list[NumberedLine] = field(default_factory=list, repr=False)

    @cached_property
    def pt2_frames(self) -> bool:
        return bool(self.chain) and any(PT2_FRAME_RE.search(_frame_text(f)) for f in self.chain.frames)

    @cached_property
    def pt2_types(self) -> bool:
        return bool(self.chain) and any(PT2_HEAD_RE.search(e.head) for e in self.chain.exceptions)

    @cached_property
    def pt2_context(self) -> bool:
        return self.pt2_frames or self.pt2_types or self._pt2_mention()

    @cached_property
    def pt2_code(self) -> bool:
        """The issue's own code uses the compiler (logs have no code blocks: fall back to the text)."""
        if not self.code:
            return self.pt2_context
        return any(PT2_CODE_RE.search(text) for _, text in self.code)

    def holds(self, fact: str) -> bool:
        if fact == "exception":
            return self.chain is not None
        if fact == "no_exception":
            return self.chain is None
        if fact == "no_pt2_frames":
            return bool(self.chain and self.chain.frames) and not self.pt2_frames and not self.pt2_types
        return bool(getattr(self, fact))


class Classifier:
    """Holds the compiled ruleset; `classify` is then a pure function of the input."""

    def __init__(self, ruleset: Ruleset, registry: GraphBreakRegistry | None = None):
        self.ruleset = ruleset
        self.registry = registry
        self.scanner = Scanner(ruleset)
        self.compiled = {p.name: re2.compile(p.regex) for p in ruleset.patterns}

    def classify_text(self, text: str | bytes, context: str = "") -> Classification:
        return self.classify(text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text, context)

    def final_error(self, text: str | bytes) -> ExceptionChain | None:
        """The error chain a classification is about (for its frames), without classifying again."""
        buf = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
        return final_chain(buf, self.scanner.scan(buf))

    def classify(self, buf: bytes, context: str = "") -> Classification:
        """Classify an input given as bytes or an mmap (never decoded whole).

        `context` (e.g. the repro script whose output `buf` is) only answers whether the
        compiler stack is involved at all; no pattern is matched against it."""
        scan = self.scanner.scan(buf)
        chain = final_chain(buf, scan)
        code = _code_texts(buf)
        facts = Facts(chain, lambda: self.scanner.mentions_pt2(buf) or self.scanner.mentions_pt2(context.encode()), code)
        matches = [m for p in self.ruleset.patterns if (m := self._match(p, scan, chain, code, facts))]
        return self._decide(matches, scan, chain, facts)

    def _match(self, pattern: Pattern, scan: ScanResult, chain: ExceptionChain | None,
               code: list[NumberedLine], facts: Facts) -> Match | None:
        evidence = tuple(self._evidence(pattern, scan, chain, code))
        if not evidence or not all(facts.holds(f) for f in pattern.requires):
            return None
        return Match(pattern, evidence)

    def _evidence(self, pattern: Pattern, scan: ScanResult, chain: ExceptionChain | None,
                  code: list[NumberedLine]) -> Iterable[Evidence]:
        regex = self.compiled[pattern.name]
        if pattern.scope == "line":
            hits = scan.pattern_hits.get(pattern.name)
            return (hits.first, hits.last) if hits else ()
        if pattern.scope == "code":
            return [Evidence(n, t) for n, t in code if regex.search(t)][:1]
        if chain is None:
            return ()
        # Root cause first: when several exceptions of the chain match, the root's line leads.
        found = []
        for exc in chain.exceptions:
            if pattern.scope == "exception" and regex.search(exc.head):
                found.append(Evidence(exc.line, exc.head))
            elif pattern.scope == "message" and (m := regex.search(exc.message)):
                found.append(Evidence(exc.line + exc.message.count("\n", 0, m.start()), _line_at(exc.message, m.start())))
            elif pattern.scope == "origin" and exc.origin and regex.search(exc.origin):
                found.append(Evidence(exc.line, exc.head))
            elif pattern.scope == "frames" and (frame := next((f for f in exc.frames if regex.search(_frame_text(f))), None)):
                found.append(Evidence(exc.line, f'{exc.head}  (via {frame.path}, in {frame.function})'))
        return found

    def _decide(self, matches: list[Match], scan: ScanResult, chain: ExceptionChain | None,
                facts: Facts) -> Classification:
        if not matches:
            return self._fallback(scan, chain, facts)
        winner = matches[0]
        category = winner.pattern.category
        rivals = [m for m in matches if m.pattern.category != category]
        runner_up = rivals[0].pattern.category if rivals else None
        confidence = winner.pattern.confidence
        if rivals and rivals[0].pattern.priority >= winner.pattern.priority - 5:
            confidence *= 0.85
        support = {m.pattern.name for m in matches if m.pattern.category == category}
        confidence = min(0.99, confidence + 0.03 * (len(support) - 1))
        evidence = _collect_evidence(winner, matches, chain)
        graph_break_id = self._graph_break_id(category, chain, scan, evidence)
        return Classification(
            category=category,
            confidence=round(confidence, 2),
            signature=_signature(category, winner, chain, graph_break_id),
            evidence=evidence,
            graph_break_id=graph_break_id,
            rule=winner.pattern.name,
            exception_type=chain.final.type_name if chain else None,
            runner_up=runner_up,
        )

    def _fallback(self, scan: ScanResult, chain: ExceptionChain | None, facts: Facts) -> Classification:
        """No rule matched: `unknown` if something PT2 failed, else `not_pt2`."""
        failed = chain is not None or bool(scan.failing_tests)
        involved = facts.pt2_frames or facts.pt2_types or facts.pt2_code  # an issue's own code, not its prose
        category = "unknown" if failed and involved else "not_pt2"
        head = chain.final.head if chain else (scan.failing_tests[0] if scan.failing_tests else "no error found")
        evidence = (Evidence(chain.final.line, chain.final.head),) if chain else ()
        confidence = 0.5 if category == "unknown" else (0.6 if chain else 0.8)
        return Classification(
            category=category,
            confidence=confidence,
            signature=make_signature(category, chain.final.type_name if chain else None, head),
            evidence=evidence,
            rule=None,
            exception_type=chain.final.type_name if chain else None,
        )

    def _graph_break_id(self, category: str, chain: ExceptionChain | None, scan: ScanResult,
                        evidence: tuple[Evidence, ...]) -> str | None:
        """The GB id of the break that decided: from the final exception, else the first one logged."""
        if self.registry is None or category not in GRAPH_BREAK_ID_CATEGORIES:
            return None
        lines = [line for exc in (chain.exceptions if chain else ()) for line in exc.message.split("\n")[:40]]
        lines.extend(e.text for e in evidence)
        found = self.registry.find_id(lines)
        return found or next((gb for gb in scan.graph_break_ids if self.registry.get(gb)), None)


def _frame_text(frame) -> str:
    """What `frames` patterns see of a frame: `path in function`."""
    return f"{frame.path} in {frame.function}"


def _line_at(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start:end if end >= 0 else len(text)].strip()


def _collect_evidence(winner: Match, matches: list[Match], chain: ExceptionChain | None) -> tuple[Evidence, ...]:
    """The deciding lines first, then the final exception and the category's other support."""
    ordered = list(winner.evidence)
    if chain:
        ordered.append(Evidence(chain.final.line, chain.final.head))
        if chain.root is not chain.final:
            ordered.append(Evidence(chain.root.line, chain.root.head))
        ordered.extend(_compile_error_lines(chain))
    ordered.extend(e for m in matches[1:] if m.pattern.category == winner.pattern.category for e in m.evidence[:1])
    seen, unique = set(), []
    for item in ordered:
        if item.line not in seen:
            seen.add(item.line)
            unique.append(Evidence(item.line, item.text[:500]))
    return tuple(unique[:MAX_EVIDENCE])


def _compile_error_lines(chain: ExceptionChain) -> list[Evidence]:
    """The `error:` lines of a C++/CUDA compile failure, not the warnings around them."""
    found = []
    for exc in chain.exceptions:
        for offset, line in enumerate(exc.message.split("\n")):
            if COMPILE_ERROR_LINE_RE.search(line) and "warning:" not in line:
                found.append(Evidence(exc.line + offset, line.strip()))
                if len(found) >= 3:
                    return found
    return found


def _signature(category: str, winner: Match, chain: ExceptionChain | None, graph_break_id: str | None) -> str:
    """Exception type and message head (plus the first compiler `error:` line) when an exception
    decided; the GB id for a logged graph break; else the deciding log line."""
    if chain and winner.pattern.scope != "line":
        detail = next((e.text for e in _compile_error_lines(chain)), None)
        exc = chain.final
        message_head = exc.head.split(":", 1)[1] if ":" in exc.head else exc.head
        return make_signature(category, exc.type_name, message_head, detail)
    if graph_break_id and category == "graph_break":
        return f"{category}|-|{graph_break_id}"
    return make_signature(category, None, winner.evidence[0].text)


def final_chain(buf: bytes, scan: ScanResult) -> ExceptionChain | None:
    """The error that surfaced last: a traceback chain, a pytest failure or a bare exception line."""
    candidates = []
    if scan.tracebacks:
        start = _chain_start(scan)
        chain = parse_python_chain(_region(buf, start.offset, start.line))
        if chain:
            candidates.append(chain)
    if scan.exception_heads:
        last_head = scan.exception_heads[-1]
        end_of_tb = max((e.line for c in candidates for e in c.exceptions), default=0)
        if last_head.line > end_of_tb and not _inside_message(candidates, last_head.line):
            region_start = _region_start_before(buf, last_head.offset)
            lines = _region(buf, region_start, last_head.line - count_newlines(buf, region_start, last_head.offset))
            chain = parse_pytest_failure(lines) or parse_bare_exception(
                [(n, t) for n, t in lines if n <= last_head.line + 200])
            if chain and chain.final.line >= last_head.line:
                candidates.append(chain)
    return max(candidates, key=lambda c: c.final.line, default=None)


def _inside_message(chains: list[ExceptionChain], line: int) -> bool:
    return any(e.line <= line <= e.line + e.message.count("\n") for c in chains for e in c.exceptions)


def _chain_start(scan: ScanResult):
    """The first traceback of the last chain: walk back while a chain separator links them."""
    tracebacks = list(scan.tracebacks)
    separators = [s.line for s in scan.chain_separators]
    index = len(tracebacks) - 1
    while index > 0 and len(tracebacks) - index < 8:
        previous, current = tracebacks[index - 1], tracebacks[index]
        if not any(previous.line < s < current.line for s in separators):
            break
        index -= 1
    return tracebacks[index]


def _region_start_before(buf: bytes, offset: int, span: int = 256 << 10) -> int:
    start = max(0, offset - span)
    return buf.rfind(b"\n", 0, start) + 1 if start else 0


def _region(buf: bytes, start: int, first_line: int) -> list[NumberedLine]:
    """Cleaned, numbered lines from byte `start` on, at most MAX_REGION_BYTES of them."""
    text = decode(buf[start:start + MAX_REGION_BYTES])
    return [(first_line + i, clean_line(line)) for i, line in enumerate(text.split("\n"))]


def _code_texts(buf: bytes) -> list[NumberedLine]:
    """Lines of an issue's Python code blocks (only small, markdown-looking inputs)."""
    if len(buf) > CODE_SCOPE_MAX_BYTES or b"```" not in buf[:CODE_SCOPE_MAX_BYTES]:
        return []
    lines: list[NumberedLine] = []
    for block in code_blocks(decode(buf)):
        if block.is_python:
            lines.extend((block.line + i, t) for i, t in enumerate(block.text.split("\n")))
    return lines
