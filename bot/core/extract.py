"""Pulling structure out of an issue's markdown or a CI log (pure).

What a triage run needs from free text: the repro (the Python code blocks, likeliest first), the
final error, the reporter's environment from `python -m torch.utils.collect_env`, device hints
and the failing test ids of a CI log.
"""
from __future__ import annotations

import ast
import re

from bot.core.logtext import clean_text
from bot.core.records import CodeBlock, ReporterEnvironment, TriageRequest

FENCE_OPEN_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
PYTHON_INFOS = {"python", "py", "python3", "py3", "ipython", "pycon", ""}

VERSION_FIELDS = {
    "torch_version": re.compile(r"^PyTorch version:\s*(\S+)", re.M),
    "cuda_version": re.compile(r"^(?:CUDA used to build PyTorch|CUDA runtime version):\s*(\d[\w.]*)", re.M),
    "python_version": re.compile(r"^Python version:\s*(\d+\.\d+(?:\.\d+)?)", re.M),
    "os": re.compile(r"^OS:\s*(.+)$", re.M),
    "triton_version": re.compile(r"^\[(?:pip3?|conda)\]\s*(?:pytorch-)?triton[=\s]+=*\s*(\d[\w.+]*)", re.M),
}
GPU_BLOCK_RE = re.compile(r"^GPU models and configuration:\s*(.*?)(?:\n(?=\S[^\n]*:)|\Z)", re.M | re.S)
GPU_LINE_RE = re.compile(r"GPU \d+:\s*(.+)")
NO_GPU_RE = re.compile(r"No CUDA|Could not collect|^N/?A$|^None$", re.I)
PIP_TORCH_RE = re.compile(r"^\[(?:pip3?|conda)\]\s*torch[=\s]+=*\s*(\d[\w.+]*)", re.M)

# What in a text says which device the failure needs.
DEVICE_HINTS = (
    ("cuda", re.compile(r"\.cuda\(|device=['\"]cuda|['\"]cuda(?::\d)?['\"]|CUDA error|illegal memory access|triton_(?:poi|red|per)_|\bH100\b|\bA100\b|NVIDIA|cudaError|device-side assert")),
    ("rocm", re.compile(r"\bROCm\b|\bHIP\b|hipError|\bMI[23]\d\dX?\b")),
    ("xpu", re.compile(r"['\"]xpu['\"]|\bIntel\(R\) Data Center GPU\b")),
    ("mps", re.compile(r"['\"]mps['\"]|\bMPS\b")),
    ("cpu", re.compile(r"device=['\"]cpu|cpp_fused_|CppCompileError|\.cpp:\d+:\d+: error")),
)


def code_blocks(markdown: str) -> list[CodeBlock]:
    """Every fenced block, in order. A block closes on a fence of the same char, at least as long."""
    blocks, lines, index = [], markdown.split("\n"), 0
    while index < len(lines):
        opening = FENCE_OPEN_RE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, info, start = opening["fence"], opening["info"].lower(), index
        body: list[str] = []
        index += 1
        while index < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[index]):
            body.append(lines[index])
            index += 1
        text = "\n".join(body)
        blocks.append(CodeBlock(language=info, text=text, line=start + 2, is_python_repro=_is_python_repro(info, text),
                                is_python=_is_python(info, text)))
        index += 1
    return blocks


def _is_python(info: str, text: str) -> bool:
    if info not in PYTHON_INFOS or not text.strip() or "Traceback (most recent call last)" in text:
        return False
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _is_python_repro(info: str, text: str) -> bool:
    return "import" in text and "torch" in text and _is_python(info, text)


def repro_scripts(markdown: str) -> tuple[str, ...]:
    """Python repros from an issue, likeliest first: runnable torch code that compiles or exports."""
    candidates = [b for b in code_blocks(markdown) if b.is_python_repro]

    def score(block: CodeBlock) -> tuple:
        text = block.text
        uses_pt2 = bool(re.search(r"torch\.compile|torch\.export|aoti_|torch\._dynamo|torch\._inductor|@torch\.compile", text))
        return (uses_pt2, "__main__" in text or "(" in text.splitlines()[-1] if text.strip() else False, len(text))

    return tuple(b.text for b in sorted(candidates, key=score, reverse=True))


def reporter_environment(text: str) -> ReporterEnvironment:
    """Versions and devices from a collect_env block and the rest of the text."""
    found = {name: (m.group(1).strip() if (m := rx.search(text)) else None) for name, rx in VERSION_FIELDS.items()}
    if found["torch_version"] is None and (pip := PIP_TORCH_RE.search(text)):
        found["torch_version"] = pip.group(1)
    if found["cuda_version"] in ("None", "N/A", "Could"):
        found["cuda_version"] = None
    gpus: tuple[str, ...] = ()
    if block := GPU_BLOCK_RE.search(text):
        gpus = tuple(dict.fromkeys(m.group(1).strip() for m in GPU_LINE_RE.finditer(block.group(1))))
        first = block.group(1).strip().splitlines()[0] if block.group(1).strip() else ""
        if not gpus and first and not NO_GPU_RE.search(first):
            gpus = (first,)
    hints = tuple(device for device, rx in DEVICE_HINTS if rx.search(text))
    if gpus and "cuda" not in hints and not any(h in hints for h in ("rocm", "xpu")):
        hints = ("cuda",) + hints
    return ReporterEnvironment(gpu_models=gpus, device_hints=hints, **found)


# Larger inputs are logs, not issue markdown (GitHub caps an issue body at 65,536 characters):
# code blocks and versions are only looked for in this much of them.
MAX_MARKDOWN_CHARS = 2 << 20


def request_from_text(text: str, source: str, reference: str | None = None,
                      failing_tests: tuple[str, ...] = ()) -> TriageRequest:
    """A TriageRequest from an issue body or a (small) log excerpt."""
    cleaned = clean_text(text)
    return TriageRequest(
        source=source,
        text=cleaned,
        repro_scripts=repro_scripts(cleaned),
        environment=reporter_environment(cleaned),
        failing_tests=failing_tests,
        reference=reference,
    )
