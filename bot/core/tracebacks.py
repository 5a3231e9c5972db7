"""Reading the final error out of a region of text (pure).

Four shapes are understood, because that is what reaches us:
- CPython tracebacks, possibly chained ("The above exception was the direct cause ..."), whole
  or cut off at either end (a traceback that ends before its exception still shows its frames),
- IPython / Jupyter tracebacks ("KeyError    Traceback (most recent call last)", `Cell In[3], line 5`,
  `File /path.py:12, in f(x)`, `----> 5 ...` markers), as notebooks users paste them,
- pytest's long format (`path.py:12: in func` frames and `E   Type: message` lines),
- a bare "Type: message" line pasted into an issue without its traceback.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from bot.core.records import ExceptionChain, Frame, RaisedException

# a frame (`path in function`, or a traceback line's path) inside the compiler stack
PT2_FRAME_RE = re.compile(
    r"torch/(?:_dynamo|_inductor|_functorch|_export|export|_higher_order_ops|_subclasses/fake_tensor|_prims|_refs|_decomp"
    r"|compiler|fx/experimental/(?:symbolic_shapes|sym_node|proxy_tensor|_constant_symnode|validator|recording))/?"
    r"|torchinductor_|/torch/_(?:dynamo|inductor)|torch/__init__\.py in compile$"
)

NumberedLine = tuple[int, str]  # (1-based line number in the input, cleaned text)

FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
SOURCE_MARKER_RE = re.compile(r"^\s*[~^]+\s*$")  # Python 3.11's carets under the failing expression
MAX_SOURCE_CHARS = 500
PYTEST_FRAME_RE = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+):(?: in (?P<func>\S+)| (?P<exc>\w+))?\s*$")
HEAD_RE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::(?P<msg>.*))?$")
TRACEBACK_HEADER = "Traceback (most recent call last):"
IPYTHON_HEADER_RE = re.compile(r"^[A-Za-z_][\w.]*\s+Traceback \(most recent call last\)\s*$")
# IPython's frame lines: 8.x `File /p/x.py:12, in f(a)` and `Cell In[3], line 5`; 7.x `/p/x.py in f(a)`
# and `<ipython-input-3-..> in <module>`. Source lines (`   11 x = 1`, `---> 12 y()`) are skipped.
IPYTHON_FRAME_RES = (
    re.compile(r"^File (?P<path>.+?):(?P<line>\d+), in (?P<func>[^\s(]+)"),
    re.compile(r"^\[(?P<path>[^\]]+\.py)\]\([^)]*\) in (?P<func>[^\s(]+)"),  # Colab links its frames
    re.compile(r"^Cell (?P<path>In ?\[[^\]]*\]), line (?P<line>\d+)"),
    re.compile(r"^(?P<path><ipython-input-[^>]*>|\S+\.py) in (?P<func>[^\s(]+)"),
)
IPYTHON_SKIP_RE = re.compile(r"^(?:\s|-*>|\.\.\.|\[\.\.\. skipping|$)")
CUT_OFF_TYPE = "<traceback cut off>"
CHAIN_SEPARATORS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
# Lines that end an exception message: the next structure in a log, a code fence, a test summary.
MESSAGE_END_RE = re.compile(
    r"^(?:`{3,}|~{3,}|={3,}|_{3,}\s|-{3,} |(?:PASSED|FAILED|ERROR|SKIPPED) |##\[|\[[\d:., -]+\] |[IWEVD]\d{4} \d\d:\d\d:\d\d"
    r"|</details>|\$ |>>> )"
)
PYTEST_E_RE = re.compile(r"^E(?: {1,8}|$)")
# Without a traceback around it, only a type named like an exception counts ("Note: ..." does not).
EXCEPTION_TYPE_SUFFIX_RE = re.compile(r"(?:Error|Exception|Unsupported|Exit|Interrupt|Failure|Failed|LimitHit|Violation|Issue|Missing)$"
                                      r"|^[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w*$")
MAX_MESSAGE_LINES = 200
MAX_MESSAGE_CHARS = 64_000


def looks_like_exception_type(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return bool(last) and last[0].isupper() and not last.isupper() and " " not in name


def parse_head(text: str) -> tuple[str, str] | None:
    """("pkg.TypeName", "message first line") for an exception head line, else None."""
    match = HEAD_RE.match(text.strip())
    if not match or not looks_like_exception_type(match["type"]):
        return None
    if match["msg"] is None and not re.search(r"(Error|Exception|Exit|Interrupt|Unsupported|Hit|Failed)$", match["type"]):
        return None
    return match["type"], (match["msg"] or "").strip()


def _read_message(lines: Sequence[NumberedLine], start: int) -> tuple[str, int]:
    """The message that starts at lines[start]; returns it and the index after its last line."""
    collected, size, index = [], 0, start
    while index < len(lines) and len(collected) < MAX_MESSAGE_LINES and size < MAX_MESSAGE_CHARS:
        text = lines[index][1]
        if index > start and (is_traceback_header(text) or text in CHAIN_SEPARATORS or MESSAGE_END_RE.match(text)):
            break
        collected.append(text)
        size += len(text) + 1
        index += 1
    while collected and not collected[-1].strip():
        collected.pop()
    return "\n".join(collected), index


def is_traceback_header(text: str) -> bool:
    return text.startswith(TRACEBACK_HEADER) or bool(IPYTHON_HEADER_RE.match(text))


def _cpython_frames(lines: Sequence[NumberedLine], index: int, frames: list[Frame]) -> int:
    """Collect `File "p", line N, in f` frames, each with the source line printed under it, from
    lines[index]; returns the index of the line after them."""
    while index < len(lines):
        text = lines[index][1]
        frame = FRAME_RE.match(text)
        if frame:
            frames.append(Frame(frame["path"], int(frame["line"]), (frame["func"] or "").strip(),
                                _frame_source(lines, index + 1)))
        elif text and not text[0].isspace() and not text.startswith("[Previous line"):
            break
        index += 1
    return index


def _frame_source(lines: Sequence[NumberedLine], index: int) -> str:
    """The source line CPython prints under a frame ("" when the next line is another frame, a
    caret marker or not indented)."""
    if index >= len(lines):
        return ""
    text = lines[index][1]
    if not text[:1].isspace() or FRAME_RE.match(text) or SOURCE_MARKER_RE.match(text):
        return ""
    return text.strip()[:MAX_SOURCE_CHARS]


def _ipython_frames(lines: Sequence[NumberedLine], index: int, frames: list[Frame]) -> int:
    """Collect IPython's frames (and skip their source excerpts); returns the index of the first other line."""
    while index < len(lines):
        text = lines[index][1]
        frame = next((m for rx in IPYTHON_FRAME_RES if (m := rx.match(text))), None)
        if frame:
            groups = frame.groupdict()
            frames.append(Frame(groups["path"], int(groups.get("line") or 0), groups.get("func") or "<module>"))
        elif not IPYTHON_SKIP_RE.match(text):
            break
        index += 1
    return index


def _parse_one_traceback(lines: Sequence[NumberedLine], start: int) -> tuple[RaisedException | None, int]:
    """Parse a CPython or IPython traceback whose header is lines[start]; returns the exception and
    the next index. A traceback that the text cuts off before its exception line still gives its
    frames (as a `CUT_OFF_TYPE` exception): where it was going is evidence too."""
    frames: list[Frame] = []
    header = lines[start][1]
    collect = _cpython_frames if header.startswith(TRACEBACK_HEADER) else _ipython_frames
    index = collect(lines, start + 1, frames)
    if index >= len(lines) or _ends_pasted_text(lines[index][1]):
        if not frames:
            return None, index
        last = lines[min(index, len(lines)) - 1][0]
        return RaisedException(CUT_OFF_TYPE, CUT_OFF_TYPE, "", last, tuple(frames)), index
    head = parse_head(lines[index][1])
    if head is None:
        return None, index + 1
    message, after = _read_message(lines, index)
    return RaisedException(head[0], lines[index][1].strip(), message, lines[index][0], tuple(frames)), after


def _ends_pasted_text(text: str) -> bool:
    """A code fence or a <details> end: a pasted traceback stops there, exception line or not."""
    return text.startswith(("```", "~~~", "</details>"))


def parse_python_chain(lines: Sequence[NumberedLine]) -> ExceptionChain | None:
    """The last chain of CPython tracebacks in `lines` (root cause first), or None."""
    chain: list[RaisedException] = []
    index, linked, first_line = 0, False, 0
    while index < len(lines):
        text = lines[index][1]
        if is_traceback_header(text):
            header_line = lines[index][0]
            exc, index = _parse_one_traceback(lines, index)
            if exc is not None:
                if not linked:
                    chain, first_line = [], header_line
                chain = chain + [exc]
            linked = False
            continue
        if text.strip() in CHAIN_SEPARATORS:
            linked = bool(chain)
        index += 1
    return ExceptionChain(tuple(chain[-8:]), first_line) if chain else None


def parse_pytest_failure(lines: Sequence[NumberedLine]) -> ExceptionChain | None:
    """The last `E   Type: message` block of pytest output, with the `file.py:N: in f` frames before it."""
    blocks: list[list[NumberedLine]] = []
    for number, text in lines:
        if PYTEST_E_RE.match(text):
            stripped = (number, text[1:].lstrip(" ") if len(text) > 1 else "")
            if blocks and blocks[-1][-1][0] == number - 1:
                blocks[-1].append(stripped)
            else:
                blocks.append([stripped])
    for block in reversed(blocks):
        inner = parse_python_chain(block)
        head_index = next((i for i, (_, t) in enumerate(block) if parse_head(t)), None)
        if inner is None and head_index is None:
            continue
        frames = tuple(_pytest_frames(lines, until=block[0][0]))
        if inner is not None:
            last = inner.final
            return ExceptionChain(inner.exceptions[:-1] + (RaisedException(last.type_name, last.head, last.message, last.line, frames + last.frames),))
        type_name, _ = parse_head(block[head_index][1])
        message, _ = _read_message(block, head_index)
        return ExceptionChain((RaisedException(type_name, block[head_index][1].strip(), message, block[head_index][0], frames),))
    return None


def _pytest_frames(lines: Sequence[NumberedLine], until: int) -> Iterable[Frame]:
    """`path.py:12: in func` frame lines of the test section that ends at line `until`."""
    section: list[Frame] = []
    for number, text in lines:
        if number >= until:
            break
        if re.match(r"^_{5,} .* _{5,}$", text):
            section = []
        frame = PYTEST_FRAME_RE.match(text)
        if frame:
            section.append(Frame(frame["path"], int(frame["line"]), frame["func"] or ""))
    return section


# An exception named in an issue's title: "torch compile fails: torch._dynamo.exc.UserError: Could not ..."
TITLE_EXCEPTION_RE = re.compile(
    r"(?:^|[\s`'\"(\[,])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Unsupported|LimitHit|Violation|Failed))"
    r":\s*(?P<msg>.*)$")


def parse_title_exception(title: NumberedLine) -> ExceptionChain | None:
    """The exception an issue's title names, as "Type: message" (only when the body shows none)."""
    number, text = title
    match = TITLE_EXCEPTION_RE.search(text.lstrip("# ").strip("`"))
    if not match:
        return None
    head = f"{match['type']}: {match['msg'].strip().strip('`')}"
    return ExceptionChain((RaisedException(match["type"], head, head, number),))


def parse_loose_frames(lines: Sequence[NumberedLine]) -> ExceptionChain | None:
    """The last run of traceback frames pasted without their header or exception line (an excerpt
    cut at both ends): where the error was going is still evidence."""
    runs: list[list[Frame]] = []
    last_line, previous = 0, -10
    for index, (number, text) in enumerate(lines):
        match = FRAME_RE.match(text) or next((m for rx in IPYTHON_FRAME_RES if (m := rx.match(text))), None)
        if not match:
            continue
        groups = match.groupdict()
        frame = Frame(groups["path"], int(groups.get("line") or 0), (groups.get("func") or "").strip())
        if index - previous > 12 or not runs:
            runs.append([])
        runs[-1].append(frame)
        previous, last_line = index, number
    if not runs:
        return None
    return ExceptionChain((RaisedException(CUT_OFF_TYPE, CUT_OFF_TYPE, "", last_line, tuple(runs[-1])),))


def parse_bare_exception(lines: Sequence[NumberedLine]) -> ExceptionChain | None:
    """The last line that reads like "Type: message" when no traceback came with it."""
    for index in range(len(lines) - 1, -1, -1):
        head = parse_head(lines[index][1])
        if head and EXCEPTION_TYPE_SUFFIX_RE.search(head[0]):
            message, _ = _read_message(lines, index)
            return ExceptionChain((RaisedException(head[0], lines[index][1].strip(), message, lines[index][0],
                                                   _frames_above(lines, index)),))
    return None


def _frames_above(lines: Sequence[NumberedLine], index: int) -> tuple[Frame, ...]:
    """Frames pasted right above a head whose "Traceback" header was cut off (people trim them)."""
    frames: list[Frame] = []
    cursor = index - 1
    while cursor >= 0 and lines[cursor][1][:1].isspace():
        frame = FRAME_RE.match(lines[cursor][1])
        if frame:
            frames.append(Frame(frame["path"], int(frame["line"]), (frame["func"] or "").strip()))
        cursor -= 1
    return tuple(reversed(frames))
