"""Reading what a run writes while it runs, without trusting it: stdout and stderr capped as they
are read (so a flood costs us at most ~2x the cap and can get the run killed), and the bootstrap's
evidence pipe, parsed into the documented shapes only (an uncaught exception, the torch probe).
"""
from __future__ import annotations

import json
import os
import threading
from typing import Callable

from .run_records import MiB

OUTPUT_KILL_FACTOR = 64  # a stream past max(cap * this, OUTPUT_KILL_MIN_BYTES) gets the run killed
OUTPUT_KILL_MIN_BYTES = 64 * MiB
MAX_EVIDENCE_READ = 256 << 10


class CappedReader(threading.Thread):
    """Drains one pipe, keeping the first quarter of `cap` bytes and a ring of the last three quarters.

    Memory stays under ~2x the cap however much the child writes; past the flood mark
    (64x the cap, at least 64 MiB) `on_flood` is called once so the caller can kill the run.
    """

    def __init__(self, fd: int, cap: int, on_flood: Callable[[], None]):
        super().__init__(daemon=True)
        self.fd, self.head_cap, self.tail_cap = fd, cap // 4, cap - cap // 4
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.on_flood, self.flood_at, self.flooded = on_flood, max(cap * OUTPUT_KILL_FACTOR, OUTPUT_KILL_MIN_BYTES), False

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self._keep(chunk)
        finally:
            os.close(self.fd)

    def _keep(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[:len(self.tail) - self.tail_cap]
        if self.total > self.flood_at and not self.flooded:
            self.flooded = True
            self.on_flood()

    def text(self) -> tuple[str, int]:
        """The kept output (with a marker line where bytes were dropped) and how many were dropped."""
        tail = self.tail[-self.tail_cap:] if len(self.tail) > self.tail_cap else self.tail
        dropped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
        return (bytes(self.head) + marker + bytes(tail)).decode("utf-8", errors="replace"), dropped


def start_readers(fds: tuple[int, int], cap: int, on_flood: Callable[[], None]) -> tuple[CappedReader, CappedReader]:
    readers = (CappedReader(fds[0], cap, on_flood), CappedReader(fds[1], cap, on_flood))
    for reader in readers:
        reader.start()
    return readers


class EvidenceReader(threading.Thread):
    """Drains the bootstrap's evidence pipe, keeping at most MAX_EVIDENCE_READ bytes."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd = fd
        self.data = bytearray()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                room = MAX_EVIDENCE_READ - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.fd)


def start_evidence_reader(fd: int | None) -> EvidenceReader | None:
    if fd is None:
        return None
    reader = EvidenceReader(fd)
    reader.start()
    return reader


def _clean_exception(value, depth: int = 0) -> dict | None:
    """A claimed exception, reduced to the documented shape and sizes (anything else: None)."""
    if not isinstance(value, dict) or depth > 5:
        return None
    kind, message = value.get("type"), value.get("message")
    if not isinstance(kind, str) or not isinstance(message, str) or not kind:
        return None
    frames = []
    for frame in value.get("frames") or []:
        if (isinstance(frame, list) and len(frame) == 3 and isinstance(frame[0], str) and type(frame[1]) is int
                and isinstance(frame[2], str)):
            frames.append([frame[0][:500], frame[1], frame[2][:200]])
        if len(frames) >= 64:
            break
    site = value.get("raise_site")
    site = " ".join(site.split())[:300] if isinstance(site, str) else ""  # one line: it is rendered under a frame
    return {"type": kind[:200], "message": message[:2000], "frames": frames, "raise_site": site,
            "cause": _clean_exception(value.get("cause"), depth + 1),
            "context": _clean_exception(value.get("context"), depth + 1),
            "suppress_context": value.get("suppress_context") is True}


MAX_PROBE_CALLS = 64
MAX_PROBE_MODULES = 32


def parse_probe(data: bytes) -> dict | None:
    """The torch probe's report (a `{"probe": ...}` line), reduced to known keys and plain values.
    Kept whatever the exit status: a silent failure is a run that exited 0."""
    for line in reversed(bytes(data or b"").splitlines()):
        try:
            value = json.loads(line)
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("probe"), dict):
            probe = value["probe"]
            calls = [c for c in _list(probe.get("calls")) if isinstance(c, dict)][:MAX_PROBE_CALLS]
            return {"calls": [{k: v for k, v in c.items() if isinstance(v, (int, float, bool, str)) and len(k) < 40}
                              for c in calls],
                    "calls_total": _count(probe.get("calls_total")),
                    "counters": plain_counters(probe.get("counters")),
                    # what each module of the script was given (runners/reduce/hoist.py validates every field)
                    "modules": [m for m in _list(probe.get("modules")) if isinstance(m, dict)][:MAX_PROBE_MODULES],
                    # the compiled module's calls a `replay` run recorded (validated there too)
                    "entry": probe.get("entry") if isinstance(probe.get("entry"), dict) else None,
                    "errors": [str(e)[:300] for e in _list(probe.get("errors"))][:10]}
    return None


def _list(value) -> list:
    return value if isinstance(value, list) else []


MAX_COUNT = 10 ** 9
MAX_NAMES = 50
MAX_TEXT = 300


def plain_counters(counters) -> dict | None:
    """Dynamo's counters as the probe reports them (runners/_torch_probe.py `counters`), every
    field checked for its type and bounded; anything else dropped. They come from the script's own
    process, so a hostile script can forge them as it can raise any exception; what it cannot do is
    hand the judges (bot/core/outcome.py) a shape they do not expect or a huge value."""
    if not isinstance(counters, dict):
        return None
    return {
        "frames": {_text(k, 40): _count(v) for k, v in _items(counters.get("frames")) if _count(v) is not None},
        "stats": {_text(k, 40): _count(v) for k, v in _items(counters.get("stats")) if _count(v) is not None},
        "graph_breaks": _count(counters.get("graph_breaks")) or 0,
        "graph_break_reasons": _texts(counters.get("graph_break_reasons"))[:5],
        "graph_break_counts": [[_text(r), _count(n)] for r, n in (_pair(item) for item in _list(counters.get("graph_break_counts"))[:MAX_NAMES])
                               if isinstance(r, str) and _count(n) is not None],
        "recompiles": {_text(k, 200): _count(v) for k, v in _items(counters.get("recompiles")) if _count(v) is not None},
        "guard_failures": {_text(k, 200): _texts(v) for k, v in _items(counters.get("guard_failures"))},
        "recompile_limit": _count(counters.get("recompile_limit")),
    }


def _items(value) -> list[tuple]:
    return list(value.items())[:MAX_NAMES] if isinstance(value, dict) else []


def _texts(value) -> list[str]:
    return [_text(t) for t in _list(value)[:20] if isinstance(t, str)]


def _count(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None


def _pair(item) -> tuple:
    return tuple(item) if isinstance(item, list) and len(item) == 2 else (None, None)


def _text(value, limit: int = MAX_TEXT) -> str:
    """A name or reason from the run: a string, at most `limit` characters, no control characters
    but newlines (Dynamo's own reasons quote code in backticks, which the rules read: the report
    neutralizes them where it quotes the text, bot/core/markdown.py `quoted`)."""
    text = str(value)[:limit]
    return "".join(c if c.isprintable() or c == "\n" else " " for c in text)


def parse_evidence(data: bytes, exit_code: int | None) -> dict | None:
    """The last well-formed exception report in `data`, or None; always None for a run that exited 0."""
    if exit_code == 0 or not data:
        return None
    for line in reversed(bytes(data).splitlines()):
        try:
            cleaned = _clean_exception(json.loads(line))
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        if cleaned is not None:
            return cleaned
    return None
