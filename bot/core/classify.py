"""Text -> Classification (pure: values in, values out).

The decision in five steps, each a small function:
1. `Scanner.scan` finds the interesting lines of the whole input in one pass (scan.py).
2. `final_chain` (final_error.py) reads the final error: the last traceback chain, pytest failure or bare
   exception line that surfaced last (tracebacks.py does the parsing).
3. `facts` states what else holds (is the compiler in the frames, is the text about PT2 at all).
4. The ranked patterns (rules/patterns.yaml) are tried against their scope; the highest
   priority match is the rules' verdict, and the rest inform confidence and the runner-up.
5. For a report (an issue's title and text, not a run's output), the code and prose features
   (features.py) and the learned text model (textmodel.py) join in, and combine.py decides:
   a decisive rule on the final error wins, else the model's calibrated distribution.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable

import re2

from bot.core import combine
from bot.core.features import Features, extract_features
from bot.core.final_error import code_lines, final_chain, segment_start
from bot.core.graph_breaks import GraphBreakRegistry
from bot.core.logtext import decode
from bot.core.records import Classification, Evidence, ExceptionChain, RaisedException
from bot.core.ruleset import Pattern, Ruleset
from bot.core.scan import ScanResult, Scanner
from bot.core.signature import make_signature
from bot.core.textmodel import MAX_BODY_CHARS_FOR_NGRAMS, LearnedParts, ModelInput, char_ngrams, load_learned, tokens
from bot.core.tracebacks import CUT_OFF_TYPE, PT2_FRAME_RE, NumberedLine

# An exception that names the compiler stack: by its type, or by what its first line says.
PT2_TYPE_RE = re.compile(r"^torch\.(?:_dynamo|_inductor|_export|export|fx\.experimental)\.|^(?:\w+\.)*(?:Unsupported|BackendCompilerFailed"
                         r"|InductorError|InternalTorchDynamoError|TorchRuntimeError|FailOnRecompileLimitHit|LoweringException"
                         r"|CppCompileError|GuardOnDataDependentSymNode|ConstraintViolationError|RecompileError)$")
PT2_MESSAGE_RE = re.compile(r"backend='?\w+'? raised|torch\._dynamo|torch\._inductor|TorchDynamo|[Ii]nductor|torch\.compile")
PT2_CODE_RE = re.compile(r"torch\.compile|torch\._dynamo|torch\._inductor|torch\.export|aoti_|@torch\.compile|compiled")
COMPILE_ERROR_LINE_RE = re.compile(r"(?:^|\s)(?:[^\s:]+:\d+:\d+: )?(?:fatal )?error: .+")
MAX_EVIDENCE = 8
# Inputs up to this size that come without a script are reports (issue texts, pasted logs): the text
# model and the features join the rules. Bigger inputs are CI logs: the final error decides.
MAX_REPORT_BYTES = 1 << 20
_DEFAULT = object()


@dataclass(frozen=True)
class Match:
    pattern: Pattern
    evidence: tuple[Evidence, ...]
    # False for a `line` match that lies before the final error in a log that raised one: an earlier
    # test's device assert is evidence, never the verdict on the failure the log ended with.
    can_decide: bool = True


@dataclass
class Facts:
    """What holds of one input besides the pattern matches; pt2_context is computed on demand."""

    chain: ExceptionChain | None
    _pt2_mention: Callable[[], bool] = field(repr=False)
    code: list[NumberedLine] = field(default_factory=list, repr=False)
    run_output: bool = False  # the input is the output of a run we made (its script came as context)

    @property
    def raised(self) -> bool:
        """An exception was seen (frames whose exception line is cut off do not count)."""
        return self.chain is not None and self.chain.final.type_name != CUT_OFF_TYPE

    @cached_property
    def pt2_frames(self) -> bool:
        return bool(self.chain) and any(PT2_FRAME_RE.search(_frame_text(f)) for f in self.chain.frames)

    @cached_property
    def pt2_types(self) -> bool:
        return bool(self.chain) and any(PT2_TYPE_RE.search(e.type_name) or PT2_MESSAGE_RE.search(e.head)
                                        for e in self.chain.exceptions)

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
            return self.raised
        if fact == "no_exception":
            return not self.raised
        if fact == "no_pt2_frames":
            return bool(self.chain and self.chain.frames) and not self.pt2_frames and not self.pt2_types
        return bool(getattr(self, fact))


@dataclass(frozen=True)
class RuleFindings:
    """What the ranked rules found in one input, and their own verdict."""

    chain: ExceptionChain | None
    facts: Facts
    matches: list[Match]
    by_rules: Classification

    @property
    def winner(self) -> Pattern | None:
        return next((m.pattern for m in self.matches if m.can_decide), None)


class Classifier:
    """Holds the compiled ruleset; `classify` is then a pure function of the input."""

    def __init__(self, ruleset: Ruleset, registry: GraphBreakRegistry | None = None,
                 learned: LearnedParts | None | object = _DEFAULT):
        self.ruleset = ruleset
        self.registry = registry
        self.scanner = Scanner(ruleset)
        self.compiled = {p.name: re2.compile(p.regex) for p in ruleset.patterns}
        self._learned = learned  # loaded on first use: a log (rules only) never pays for the model
        self.anywhere = {p.name: re2.compile("(?m)" + p.regex) for p in ruleset.patterns
                         if p.scope in ("exception", "message") and p.regex != "."}

    @property
    def learned(self) -> LearnedParts | None:
        if self._learned is _DEFAULT:
            self._learned = load_learned()
        return self._learned

    @learned.setter
    def learned(self, value: LearnedParts | None) -> None:
        self._learned = value

    def classify_text(self, text: str | bytes, context: str = "", report: bool | None = None) -> Classification:
        buf = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
        return self.classify(buf, context, report=report)

    def final_error(self, text: str | bytes) -> ExceptionChain | None:
        """The error chain a classification is about (for its frames), without classifying again."""
        buf = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
        return final_chain(buf, self.scanner.scan(buf))

    def classify(self, buf: bytes, context: str = "", report: bool | None = None) -> Classification:
        """Classify an input given as bytes or an mmap (never decoded whole).

        `context` (e.g. the repro script whose output `buf` is) only answers whether the
        compiler stack is involved at all; no pattern is matched against it. `report` says the
        input is what a person wrote (an issue), which the text model reads; by default that is
        an input of issue size that comes without a script."""
        found = self._by_rules(buf, context)
        if report is None:
            report = not context and len(buf) <= MAX_REPORT_BYTES
        if not report or self.learned is None:
            return found.by_rules
        return combine.decide(self.report_evidence(buf, found), self.learned, self.ruleset)

    def report_evidence(self, buf: bytes, found: "RuleFindings | None" = None, with_model: bool = True) -> combine.Evidence:
        """Everything the verdict on a report is decided from (training reads `words` from here)."""
        found = found or self._by_rules(buf, "")
        text = decode(buf[:MAX_REPORT_BYTES])
        features = extract_features(text, self.ruleset.features)
        signals = model_signals(found.matches, features, found.chain, found.facts) + self._anywhere(text)
        title = report_title(text)
        given = ModelInput(tuple(tokens(text)), tuple(tokens(title)), tuple(signals), tuple(char_ngrams(title)),
                           tuple(char_ngrams(text[:MAX_BODY_CHARS_FOR_NGRAMS])))
        model = self.learned.model if with_model and self.learned is not None else None
        return combine.Evidence(found.by_rules, found.winner, features,
                                found.facts.pt2_frames or found.facts.pt2_types,
                                model.scores(given) if model else None, given)

    def _anywhere(self, text: str) -> list[str]:
        """Exception and message rules matched against any line of a report (`__a_<rule>__`): in a
        cut-off excerpt the error often sits in the title or the prose, not in a final traceback."""
        return [f"__a_{name}__" for name, regex in self.anywhere.items() if regex.search(text)]

    def _by_rules(self, buf: bytes, context: str) -> "RuleFindings":
        """The rules' findings. A big log is read from its end first: when its final error decides
        on its own, what the rest of the log holds could only add evidence, so it is not read."""
        scan = self.scanner.scan(buf, lazy=True)
        found = self._findings(buf, context, scan)
        if scan.rest is not None and not (found.winner is not None and found.winner.decisive):
            found = self._findings(buf, context, scan.complete())
        return found

    def _findings(self, buf: bytes, context: str, scan: ScanResult) -> "RuleFindings":
        chain = final_chain(buf, scan)
        code = code_lines(buf)
        facts = Facts(chain, lambda: self.scanner.mentions_pt2(buf) or self.scanner.mentions_pt2(context.encode()), code,
                      run_output=bool(context))
        found = [m for p in self.ruleset.patterns if (m := self._match(p, scan, chain, code, facts))]
        matches = [m for m in found if m.can_decide] + [m for m in found if not m.can_decide]  # deciders first
        return RuleFindings(chain, facts, matches, self._decide([m for m in matches if m.can_decide], scan, chain, facts))

    def _match(self, pattern: Pattern, scan: ScanResult, chain: ExceptionChain | None,
               code: list[NumberedLine], facts: Facts) -> Match | None:
        evidence = tuple(self._evidence(pattern, scan, chain, code))
        if not evidence or not all(facts.holds(f) for f in pattern.requires):
            return None
        before_final_error = pattern.scope == "line" and facts.raised and max(e.line for e in evidence) <= segment_start(scan, chain)
        return Match(pattern, evidence, can_decide=not before_final_error)

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
            elif pattern.scope == "raise_site" and exc.raise_site and regex.search(exc.raise_site):
                found.append(Evidence(exc.line, f"{exc.head}  (raised by `{exc.raise_site}`)"))
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
            is_pt2=self.ruleset.categories[category].pt2,
        )

    def _fallback(self, scan: ScanResult, chain: ExceptionChain | None, facts: Facts) -> Classification:
        """No rule matched: `unknown` if something PT2 failed, else `not_pt2`."""
        failed = chain is not None or bool(scan.failing_tests)
        involved = facts.pt2_frames or facts.pt2_types or facts.pt2_code  # an issue's own code, not its prose
        category = self.ruleset.fallback if failed and involved else self.ruleset.not_pt2
        head = chain.final.head if chain else (scan.failing_tests[0] if scan.failing_tests else "no error found")
        evidence = (Evidence(chain.final.line, chain.final.head),) if chain else ()
        confidence = 0.5 if category == self.ruleset.fallback else (0.6 if chain else 0.8)
        return Classification(
            category=category,
            confidence=confidence,
            signature=make_signature(category, chain.final.type_name if chain else None, head),
            evidence=evidence,
            rule=None,
            exception_type=chain.final.type_name if chain else None,
            is_pt2=self.ruleset.categories[category].pt2,
        )

    def _graph_break_id(self, category: str, chain: ExceptionChain | None, scan: ScanResult,
                        evidence: tuple[Evidence, ...]) -> str | None:
        """The GB id of the break that decided: from the final exception, else the first one logged."""
        if self.registry is None or not self.ruleset.categories[category].graph_break_ids:
            return None
        lines = [line for exc in (chain.exceptions if chain else ()) for line in exc.message.split("\n")[:40]]
        lines.extend(e.text for e in evidence)
        found = self.registry.find_id(lines)
        return found or next((gb for gb in scan.graph_break_ids if self.registry.get(gb)), None)


def report_title(text: str) -> str:
    """An issue's title, when the report starts with it as `# Title` (how the App and the corpus
    write title and body together)."""
    first = text.split("\n", 1)[0]
    return first[2:] if first.startswith("# ") else ""


def model_signals(matches: list[Match], features: Features, chain: ExceptionChain | None, facts: Facts) -> list[str]:
    """What the rules and features found, as words the text model weighs (`__r_cpp_compile_error__`)."""
    signals = features.tokens()
    for position, match in enumerate(matches):
        signals.append(f"__r_{match.pattern.name}__")
        signals.append(f"__rc_{match.pattern.category}__")
        if position == 0:
            signals.append(f"__win_{match.pattern.category}__")
    if chain is not None:
        signals.append("__tb_cut__" if chain.final.type_name == CUT_OFF_TYPE else "__tb__")
        if facts.pt2_frames:
            signals.append("__pt2_frames__")
    return signals


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


def _announced_line(exc: RaisedException) -> str | None:
    """The line a head only announces: `BackendCompilerFailed: backend='inductor' raised:` names the
    failure on the next line of its message (`NotImplementedError: the derivative for ...`). Without
    it every failure under that wrapper had one signature, and the minimizer counted any of them as
    "the same failure"."""
    if not exc.head.rstrip().endswith(":"):
        return None
    return next((line.strip() for line in exc.message.split("\n")[1:] if line.strip()), None)


def _signature(category: str, winner: Match, chain: ExceptionChain | None, graph_break_id: str | None) -> str:
    """Exception type and message head (plus the first compiler `error:` line) when an exception
    decided; the GB id for a logged graph break; else the deciding log line."""
    if chain and winner.pattern.scope != "line":
        exc = chain.final
        detail = next((e.text for e in _compile_error_lines(chain)), None) or _announced_line(exc)
        message_head = exc.head.split(":", 1)[1] if ":" in exc.head else exc.head
        return make_signature(category, exc.type_name, message_head, detail)
    if graph_break_id and category == "graph_break":
        return f"{category}|-|{graph_break_id}"
    return make_signature(category, None, winner.evidence[0].text)
