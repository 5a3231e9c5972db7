"""The records that flow between pipeline stages.

Every record is a frozen dataclass with `to_dict()` so reports round-trip through JSON; nothing
downstream passes dicts of dicts around.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Evidence:
    """One line of the input that supports a verdict. `line` is 1-based in the original input."""

    line: int
    text: str


@dataclass(frozen=True)
class Frame:
    """One traceback frame: the file as printed (absolute or torch-relative), its line, the function,
    and the source line CPython printed under it ("" when the text has none)."""

    path: str
    line: int
    function: str
    source: str = ""


@dataclass(frozen=True)
class RaisedException:
    """One exception of a chain: its type as printed, its whole message, where it was raised."""

    type_name: str
    head: str  # the "Type: first line of message" line, cleaned
    message: str  # the whole message, continuation lines included (capped)
    line: int  # 1-based line of `head` in the input
    frames: tuple[Frame, ...] = ()

    @property
    def origin(self) -> str | None:
        """File of the innermost frame: where the exception was raised."""
        return self.frames[-1].path if self.frames else None

    @property
    def raise_site(self) -> str | None:
        """The source line of the innermost frame: the statement that raised (an `assert ...`)."""
        return self.frames[-1].source if self.frames and self.frames[-1].source else None


@dataclass(frozen=True)
class ExceptionChain:
    """The final error of a text: its exceptions, root cause first, the one that surfaced last."""

    exceptions: tuple[RaisedException, ...]
    first_line: int = 0  # where the chain's text starts (its first traceback header); 0 if not known

    @property
    def start(self) -> int:
        """The first line that belongs to this error: anything a log printed before it is history."""
        return self.first_line or min((e.line for e in self.exceptions), default=0)

    @property
    def root(self) -> RaisedException:
        return self.exceptions[0]

    @property
    def final(self) -> RaisedException:
        return self.exceptions[-1]

    @property
    def frames(self) -> tuple[Frame, ...]:
        return tuple(f for exc in self.exceptions for f in exc.frames)


@dataclass(frozen=True)
class CodeBlock:
    """A fenced block from an issue. `is_python` marks code that parses as Python;
    `is_python_repro` additionally imports torch (a script that can run on its own)."""

    language: str
    text: str
    line: int
    is_python_repro: bool
    is_python: bool = False


@dataclass(frozen=True)
class ReporterEnvironment:
    """What the reporter's `collect_env` block (or the text) says about their machine."""

    torch_version: str | None = None
    cuda_version: str | None = None
    python_version: str | None = None
    os: str | None = None
    gpu_models: tuple[str, ...] = ()
    triton_version: str | None = None
    device_hints: tuple[str, ...] = ()  # "cuda", "cpu", "rocm", "mps", "xpu"

    @property
    def needs_gpu(self) -> bool:
        return any(hint in ("cuda", "rocm", "xpu") for hint in self.device_hints)


@dataclass(frozen=True)
class TriageRequest:
    """What a triage run starts from, whichever way it came in."""

    source: str  # "issue" | "comment" | "ci_job" | "local_file"
    text: str
    repro_scripts: tuple[str, ...] = ()
    environment: ReporterEnvironment = field(default_factory=ReporterEnvironment)
    failing_tests: tuple[str, ...] = ()
    reference: str | None = None  # issue URL, job id or file path

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Classification:
    """The verdict on one text.

    `signature` is stable across machines for the same failure (no addresses, temp paths,
    hashes or line numbers), so it serves "is it still the same failure?" and dedup.
    """

    category: str
    confidence: float
    signature: str
    evidence: tuple[Evidence, ...] = ()
    graph_break_id: str | None = None
    rule: str | None = None  # the pattern that decided, None for fallbacks
    exception_type: str | None = None
    runner_up: str | None = None  # the best other category that also matched
    decided_by: str = "rule"  # "rule" (a decisive pattern), "model" (text model + features), "fallback"
    is_pt2: bool = True  # False for the verdict that the compiler is not at fault (its category says `pt2: false`)
    unsure: bool = False  # the confidence is below the calibrated threshold: say so, label `needs triage`
    alternatives: tuple[tuple[str, float], ...] = ()  # the top categories with their probabilities
    features: tuple[str, ...] = ()  # what the report's code and prose showed (bot/features.py)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["evidence"] = [asdict(e) for e in self.evidence]
        data["alternatives"] = [{"category": c, "probability": p} for c, p in self.alternatives]
        data["features"] = list(self.features)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Classification":
        fields = dict(data)
        fields["evidence"] = tuple(Evidence(**e) for e in data.get("evidence", ()))
        fields["alternatives"] = tuple((a["category"], a["probability"]) for a in data.get("alternatives", ()))
        fields["features"] = tuple(data.get("features", ()))
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in fields.items() if k in known})
