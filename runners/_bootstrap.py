"""Runs a repro script as `python repro.py` would, and reports its uncaught exception on a private fd.

    python /.pt2/_bootstrap.py EVIDENCE_FD SCRIPT [ARGS...]      (a cold run, from _launcher.py)
    _bootstrap.run_script(EVIDENCE_FD, SCRIPT, warm=True)         (a warm run, in the worker's child)

The script runs as __main__ (its own module, `__file__`, `sys.argv`, `sys.path[0]` = its directory,
compiled under its own file name), so tracebacks, pickling and `if __name__ == "__main__"` behave as
under a plain interpreter, and our own frames are cut from the traceback it prints. Exit statuses
follow the interpreter: SystemExit(code), 1 for an uncaught exception, death by SIGINT after a
KeyboardInterrupt.

The evidence: when an exception escapes the script, one JSON line goes to EVIDENCE_FD before the
traceback is printed: {"type": "module.QualName", "message", "frames": [[file, line, function]...],
"raise_site" (the source line of the innermost frame, as the traceback prints it), "cause", "context",
"suppress_context"} (sizes capped here and again by the reader). We catch the
exception around the script rather than through sys.excepthook, which the script may replace.

What the evidence is worth: the fd belongs to the script's own process, so a script that targets the
channel can write a claim of an exception it never raised (or close the fd and claim nothing). It
cannot make a run that exited 0 look failed: the trusted side reads the exit status from the
launcher, and ignores the channel when the status is 0. Printed text is never evidence.

Standalone (stdlib only, no project imports): it runs under whichever Python the repro uses.
"""
import json
import linecache
import os
import signal
import sys

MAX_MESSAGE_CHARS = 2000
MAX_SOURCE_CHARS = 300
MAX_FRAMES = 64  # the innermost ones
MAX_CHAIN = 5
MAX_EVIDENCE_BYTES = 60000  # under a pipe's 64 KiB, so the write never blocks on a reader that is gone


def qualified_name(kind) -> str:
    module = getattr(kind, "__module__", None) or "builtins"
    return f"{module}.{getattr(kind, '__qualname__', kind.__name__)}"


def safe_str(exc) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the exception
        text = f"<unprintable {type(exc).__name__}>"
    return text[:MAX_MESSAGE_CHARS]


def frames_of(tb) -> list:
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append([code.co_filename, tb.tb_lineno, code.co_name])
        tb = tb.tb_next
    return frames[-MAX_FRAMES:]


def raise_site(frames: list) -> str:
    """The source line of the innermost of `frames` ("assert torch.allclose(a, b)"), "" if unreadable."""
    if not frames:
        return ""
    path, line, _ = frames[-1]
    try:
        return linecache.getline(path, line).strip()[:MAX_SOURCE_CHARS]
    except Exception:  # noqa: BLE001 - a missing or undecodable file: no source, as in a traceback
        return ""


def describe(exc, depth: int = 0, seen=None):
    """The JSON-safe description of `exc` and (to MAX_CHAIN levels) its cause and context."""
    if exc is None or depth > MAX_CHAIN:
        return None
    seen = seen if seen is not None else set()
    if id(exc) in seen:
        return None
    seen.add(id(exc))
    frames = frames_of(exc.__traceback__)
    return {"type": qualified_name(type(exc)), "message": safe_str(exc), "frames": frames,
            "raise_site": raise_site(frames),
            "cause": describe(exc.__cause__, depth + 1, seen),
            "context": describe(exc.__context__, depth + 1, seen),
            "suppress_context": bool(exc.__suppress_context__)}


def report(evidence_fd: int, exc, close: bool = True) -> None:
    """Write the description once, shrinking it until it fits; never raises."""
    if evidence_fd < 0:
        return
    try:
        description = describe(exc)
        data = json.dumps(description).encode()
        while len(data) > MAX_EVIDENCE_BYTES and description["frames"]:
            description["frames"] = description["frames"][len(description["frames"]) // 2 + 1:]
            description["cause"] = description["context"] = None
            data = json.dumps(description).encode()
        view = memoryview(data[:MAX_EVIDENCE_BYTES] + b"\n")
        while view:
            view = view[os.write(evidence_fd, view):]
    except Exception:  # noqa: BLE001 - the run goes on; the trusted side just gets no evidence
        pass
    finally:
        if close:
            _close(evidence_fd)


def _write_line(fd: int, payload) -> None:
    """One JSON line on the evidence fd (capped like the exception report); never raises."""
    if fd < 0:
        return
    try:
        data = json.dumps(payload, default=str).encode()[:MAX_EVIDENCE_BYTES - 1] + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except Exception:  # noqa: BLE001
        pass


def start_probe():
    """The torch probe (_torch_probe.py, beside this file) when the run asks for one (TRIAGE_TORCH_PROBE):
    it wraps torch.compile before the script starts. None otherwise."""
    if not os.environ.get("TRIAGE_TORCH_PROBE"):
        return None
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            import _torch_probe
        finally:
            sys.path.pop(0)
        _torch_probe.install(_torch_probe.config_from_env())
        return _torch_probe
    except Exception as exc:  # noqa: BLE001 - no probe: the run goes on, and says why in the report
        return {"errors": [f"probe not installed: {type(exc).__name__}: {exc}"[:300]]}


def send_probe(evidence_fd: int, probe) -> None:
    """The probe's findings as a `{"probe": ...}` line, whatever the exit status."""
    if probe is None:
        return
    findings = probe if isinstance(probe, dict) else probe.finish()
    _write_line(evidence_fd, {"probe": findings})


def exec_as_main(script: str) -> None:
    """What `python script` does: a new __main__ (for good: pickling and atexit handlers see it),
    __file__ absolute, sys.argv[0] as given, the source compiled under its own file name."""
    import builtins
    import importlib.machinery
    import types
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def exit_status(exc) -> int:
    """What the interpreter exits with for SystemExit(code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:  # noqa: BLE001
        pass
    return 1


def run_as_main(script: str, evidence_fd: int) -> int:
    """Exit status of running `script` as __main__, printing an uncaught exception like python does."""
    probe = start_probe()
    try:
        exec_as_main(script)
    except SystemExit as exc:
        send_probe(evidence_fd, probe)
        _close(evidence_fd)
        return exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - exactly what the interpreter would print
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next  # drop our own frames: the traceback starts at <module>
        # (none left for a SyntaxError in the script: python prints no traceback for it either)
        exc = exc.with_traceback(tb)
        report(evidence_fd, exc, close=False)
        send_probe(evidence_fd, probe)
        _close(evidence_fd)
        sys.excepthook(type(exc), exc, tb)
        if isinstance(exc, KeyboardInterrupt):
            return -signal.SIGINT
        return 1
    send_probe(evidence_fd, probe)
    _close(evidence_fd)
    return 0


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def finish(code: int) -> None:
    """Interpreter shutdown, minus the parts that would touch a warm server's state: wait for
    non-daemon threads, run atexit handlers, flush stdio, then leave without unwinding."""
    try:
        import threading
        threading._shutdown()
    except Exception:  # noqa: BLE001
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 120
    if code < 0:  # died of a signal, as python does after KeyboardInterrupt
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def main() -> None:
    evidence_fd, script = int(sys.argv[1]), sys.argv[2]
    try:
        os.set_inheritable(evidence_fd, False)  # never into the script's own subprocesses
    except OSError:
        evidence_fd = -1
    sys.argv = sys.argv[2:]
    path = os.path.abspath(script)
    sys.path[0] = os.path.dirname(path)
    code = run_as_main(path, evidence_fd)
    if code < 0:
        finish(code)
    sys.exit(code)  # the interpreter's own shutdown, as after `python repro.py`


if __name__ == "__main__":
    main()
