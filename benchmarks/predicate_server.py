"""One predicate for every reducer that benchmarks/minimize_vs_peers.py compares.

A `PredicateServer` is made per case. It owns ONE warm pool (`bot.cli.main.make_runner`, the runner
`pt2-triage minimize` uses, with the same --jobs) and the case's original classification, and it
answers "is this candidate interesting?" with our Minimizer's own judgement:
`Minimizer.is_interesting(original, candidate, check_compiler_off)` (bot/pipeline/minimize.py: keeps
`import torch` and a PT2 entry point, classifies to the same category and signature with no
NameError-style slippage, and, when the original runs clean with Dynamo disabled, runs clean that
way too, or where it fails that way, fails there only as it does). The original and
`check_compiler_off` are decided once, at start-up, exactly as
`Minimizer.minimize` decides them (`Minimizer.needs_compiler_off_check`). The shortcuts taken before that, "no" without a
run: a candidate that does not parse (a run could only end in a SyntaxError, which is slippage), and one that is no
longer the same kind of repro (runners/reduce/shape.py: a bare number where the original compiled or exported a
tensor input, the entry point gone, the branch on the input gone). Ours never runs such a candidate, and a peer
whose result passes an int for the model's tensor is not the repro a maintainer would keep, so every reducer is
held to it.

Reducers reach it in two ways, both ending in `PredicateServer.judge`:
  - over a Unix socket in a private temp dir (benchmarks/interesting.py is the client; the peers use it)
  - in-process (ours: `Minimizer.is_interesting` overridden to call `judge`, so our reducer's other runs,
    the original's classification and the final one, go through the same pool)

Runs are counted per *session* (one reducer on one case; `begin` .. `end`, never two at once):
  runs          predicate calls that ran the candidate (one or two sandboxed runs)
  cache_hits    predicate calls answered from the session's cache (same text asked before)
  no_run        predicate calls answered without a run (does not parse, no torch import / PT2 call)
  sandbox_runs  every sandboxed run in the session (a compiler-off check's second run, ours' own
                classifications of the original and the result); run_s: their summed durations
  late          calls that came after the session ended (answered "no", nothing run)
A session's deadline bounds each run as our Minimizer bounds it (`Minimizer.run_timeout`), and `end`
waits for the runs still in flight, so nothing of one reducer runs into the next one's time.

    python benchmarks/predicate_server.py CASE.py [--jobs 2] [--timeout 60]
        serve CASE's predicate until interrupted (prints the socket path; then e.g.
        `benchmarks/interesting.py --socket PATH cand.py`), then print the counts
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import logging
import os
import signal
import socketserver
import sys
import tempfile
import threading
import time
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.cli.main import build_classifier, make_runner  # noqa: E402
from bot.core.classify import Classifier  # noqa: E402
from bot.pipeline.minimize import Minimizer, RecentRuns, keeps_pt2  # noqa: E402
from bot.pipeline.reproduce import reproduces  # noqa: E402
from runners.reduce import count_tokens  # noqa: E402
from runners.reduce.shape import shape_of  # noqa: E402
from runners.safefs import remove_tree  # noqa: E402
from runners.sandbox import RunResult, RunSpec  # noqa: E402

log = logging.getLogger(__name__)

SOCKET_NAME = "predicate.sock"
_SESSION_DEADLINE = object()  # judge(): bound the runs by the session's deadline
_PARSE_LOCK = threading.Lock()  # one parse at a time: CPython 3.11's ast.parse is not thread-safe


@dataclass
class Session:
    """One reducer's use of the predicate on one case."""
    reducer: str
    started: float  # time.monotonic()
    deadline: float
    cache_dir: str  # the Inductor cache of this reduction (as `pt2-triage minimize` makes one per job)
    calls: int = 0
    runs: int = 0
    cache_hits: int = 0
    no_run: int = 0
    sandbox_runs: int = 0
    cold_runs: int = 0  # sandboxed runs the pool could not run warm
    run_s: float = 0.0  # the sandboxed runs' durations, summed
    late: int = 0
    errors: int = 0  # predicate calls that raised (answered "no")
    interesting: int = 0
    progress: list[tuple[float, int, int]] = field(default_factory=list)  # (s since start, runs so far, tokens) per "yes"
    ended: float | None = None
    drain_s: float = 0.0  # how long `end` waited for runs still in flight
    closed: bool = False
    in_flight: int = 0
    cache: dict[str, bool] = field(default_factory=dict, repr=False)

    def counts(self) -> dict:
        return {"reducer": self.reducer, "calls": self.calls, "runs": self.runs, "cache_hits": self.cache_hits,
                "no_run": self.no_run, "sandbox_runs": self.sandbox_runs, "cold_runs": self.cold_runs,
                "run_s": round(self.run_s, 1),
                "late": self.late, "errors": self.errors, "interesting": self.interesting,
                "drain_s": round(self.drain_s, 1)}


def _key(source: str) -> str:
    return hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()


class PredicateServer:
    """The case's predicate over one warm pool; see the module docstring. Use as a context manager."""

    def __init__(self, source: str, *, jobs: int = 2, timeout_s: float = 60.0, classifier: Classifier | None = None):
        self.source = source
        self.shape = shape_of(ast.parse(source))  # what every candidate keeps (runners/reduce/shape.py)
        self.jobs = jobs
        self.timeout_s = timeout_s
        self.classifier = classifier or build_classifier(None)
        self._stack = ExitStack()
        self._pool_runner = make_runner(self._stack, jobs)
        self._cond = threading.Condition()
        self._local = threading.local()
        self.session: Session | None = None
        self.socket_path: str | None = None
        self._socket_dir: str | None = None
        self._server: socketserver.BaseServer | None = None
        self._thread: threading.Thread | None = None
        try:
            self._judge_original()
        except BaseException:
            self.close()
            raise

    # --- the original's judgement, made once --------------------------------------------------------
    def _judge_original(self) -> None:
        """What `Minimizer.minimize` decides before it searches: the original's classification, whether
        it reproduces, whether candidates must also run clean with the compiler off, and the cheapest
        backend that shows the failure (the candidates' runs use it)."""
        cache_dir = tempfile.mkdtemp(prefix="pt2-predicate-setup-")
        started = time.monotonic()
        self.backend_env: dict[str, str] = {}
        self.original_output = ""
        self.check_compiler_off = False
        self.eager_failure = None
        try:
            minimizer = self._minimizer(cache_dir, None)
            self.original, result = minimizer.classify_original(self.source)
            self.original_output = minimizer.original_output
            self.original_status = result.status
            self.original_run_s = result.duration_s
            self.original_warm = result.warm
            self.reproducible = keeps_pt2(self.source) and reproduces(self.original, result.status)
            self.check_compiler_off = self.reproducible and minimizer.needs_compiler_off_check(self.original, self.source)
            self.eager_failure = minimizer.eager_failure  # where it fails without the compiler otherwise
            self.backend_env = minimizer.cheapest_backend_env(self.original, self.source) if self.reproducible else {}
            if not minimizer.keeps_branch(self.original):  # the same rule as ours (Minimizer.keeps_branch)
                self.shape = self.shape.without_branch()
        finally:
            remove_tree(cache_dir)
        self.setup_s = time.monotonic() - started  # includes starting the warm pool

    def describe(self) -> dict:
        return {"category": self.original.category, "signature": self.original.signature,
                "status": self.original_status, "reproducible": self.reproducible,
                "compiler_off": self.check_compiler_off, "backend_env": self.backend_env, "original_run_s": self.original_run_s,
                "original_warm": self.original_warm, "setup_s": round(self.setup_s, 1)}

    # --- the runner every run goes through -----------------------------------------------------------
    def runner(self, spec: RunSpec) -> RunResult:
        """The pool's runner, counting runs for the session (and for the predicate call on this thread)."""
        result = self._pool_runner(spec)
        with self._cond:
            if self.session is not None:
                self.session.sandbox_runs += 1
                self.session.cold_runs += not result.warm
                self.session.run_s += result.duration_s
        if getattr(self._local, "runs", None) is not None:
            self._local.runs += 1
        return result

    def _minimizer(self, cache_dir: str | None, deadline: float | None, recent: RecentRuns | None = None) -> Minimizer:
        minimizer = Minimizer(self.classifier, self.runner, timeout_s=self.timeout_s, parallelism=self.jobs)
        if recent is not None:  # ours' own: its final classification reads them (Minimizer.final_verdict)
            minimizer.recent = recent
        minimizer.cache_dir = cache_dir
        minimizer.deadline = deadline
        minimizer.backend_env = self.backend_env
        minimizer.original_output = self.original_output
        minimizer.compiler_off_checked = self.check_compiler_off  # what "the same failure" compares follows it
        minimizer.eager_failure = self.eager_failure
        return minimizer

    # --- the predicate -------------------------------------------------------------------------------
    def decide(self, candidate: str, *, cache_dir: str | None, deadline: float | None,
               recent: RecentRuns | None = None) -> bool:
        """Our Minimizer's judgement of `candidate` against the original (no counting, no cache)."""
        try:
            with _PARSE_LOCK, warnings.catch_warnings():  # ast.parse is not thread-safe in 3.11 (cpython#106905)
                warnings.simplefilter("ignore")
                tree = ast.parse(candidate)
                compile(tree, "<candidate>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if not self.shape.kept_by(shape_of(tree)):
            return False  # another kind of repro (an int for a tensor input, no entry point): ours never runs one
        return self._minimizer(cache_dir, deadline, recent).is_interesting(self.original, candidate,
                                                                              self.check_compiler_off)

    def judge(self, candidate: str, *, deadline=_SESSION_DEADLINE, cache_dir: str | None = None,
              use_cache: bool = True, recent: RecentRuns | None = None) -> bool:
        """A predicate call of the current session: `decide`, counted, cached by text when `use_cache`.
        `deadline` (default: the session's) and `cache_dir` (default: the session's) let ours pass its
        own Minimizer's, as `Minimizer.is_interesting` would use them; `recent`: its record of the
        latest runs (Minimizer.final_verdict reads them)."""
        key = _key(candidate)
        with self._cond:
            session = self.session
            if session is None or session.closed:
                if session is not None:
                    session.late += 1
                return False
            session.calls += 1
            if use_cache and key in session.cache:
                session.cache_hits += 1
                return session.cache[key]
            session.in_flight += 1
        self._local.runs = 0
        verdict, errored = False, False
        try:
            verdict = self.decide(candidate, cache_dir=cache_dir or session.cache_dir,
                                  deadline=session.deadline if deadline is _SESSION_DEADLINE else deadline,
                                  recent=recent)
        except Exception:  # as the Reducer treats a predicate that raises: "no"
            log.exception("predicate call failed")
            errored = True
        finally:
            ran, self._local.runs = self._local.runs, None
            with self._cond:
                session.in_flight -= 1
                session.errors += errored
                if ran:
                    session.runs += 1
                else:
                    session.no_run += 1
                if use_cache and not errored:
                    session.cache[key] = verdict
                if verdict:
                    session.interesting += 1
                    session.progress.append((round(time.monotonic() - session.started, 1), session.runs,
                                             count_tokens(candidate)))
                self._cond.notify_all()
        return verdict

    def verify(self, source: str) -> bool:
        """A final result re-checked once: the same judgement, outside any session (not counted),
        uncached, with a fresh Inductor cache and no deadline."""
        cache_dir = tempfile.mkdtemp(prefix="pt2-predicate-verify-")
        try:
            return self.decide(source, cache_dir=cache_dir, deadline=None)
        finally:
            remove_tree(cache_dir)

    # --- sessions -------------------------------------------------------------------------------------
    def begin(self, reducer: str, budget_s: float) -> Session:
        with self._cond:
            if self.session is not None:
                raise RuntimeError(f"session {self.session.reducer!r} is still open: one reducer at a time")
            now = time.monotonic()
            self.session = Session(reducer, now, now + budget_s, tempfile.mkdtemp(prefix="pt2-predicate-cache-"))
            # every reducer is told the original's verdict, which the server's set-up found: ours is
            # (it does not re-run the original either), and a peer's first question is that one
            self.session.cache[_key(self.source)] = self.reproducible
            return self.session

    def end(self) -> Session:
        """Close the session: later calls are "no" without a run; wait for the runs in flight."""
        with self._cond:
            session = self.session
            if session is None:
                raise RuntimeError("no open session")
            session.closed = True
            session.ended = time.monotonic()
            while session.in_flight:
                self._cond.wait()
            session.drain_s = time.monotonic() - session.ended
            self.session = None
        remove_tree(session.cache_dir)
        return session

    # --- the socket -----------------------------------------------------------------------------------
    def serve(self) -> str:
        """Listen on a Unix socket in a private temp dir (in a thread); returns its path."""
        self._socket_dir = tempfile.mkdtemp(prefix="pt2-pred-")
        os.chmod(self._socket_dir, 0o700)
        self.socket_path = os.path.join(self._socket_dir, SOCKET_NAME)
        self._server = _Server(self.socket_path, _Handler)
        self._server.predicate = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="predicate-server", daemon=True)
        self._thread.start()
        return self.socket_path

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._socket_dir is not None:
            remove_tree(self._socket_dir)
            self._socket_dir = None
        self._stack.close()

    def __enter__(self) -> "PredicateServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Handler(socketserver.StreamRequestHandler):
    """One request per connection: a JSON object read to EOF (the client shuts its side down),
    answered with one JSON object. {"op": "judge", "source": ...} -> {"interesting": bool};
    {"op": "describe"} -> the original's classification."""

    def handle(self) -> None:
        predicate: PredicateServer = self.server.predicate
        try:
            request = json.loads(self.rfile.read().decode("utf-8", "surrogatepass"))
            op = request.get("op", "judge")
            if op == "judge":
                reply = {"interesting": predicate.judge(str(request["source"]))}
            elif op == "describe":
                reply = predicate.describe()
            else:
                reply = {"error": f"unknown op {op!r}"}
        except Exception as exc:  # a bad request is answered, never takes the server down
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            self.wfile.write(json.dumps(reply).encode())
        except OSError:
            pass  # the client is gone (a peer stopped it); its run still counted


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", help="the failing script whose failure candidates must keep")
    parser.add_argument("--jobs", type=int, default=2, help="warm workers (default 2)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per candidate run (default 60)")
    parser.add_argument("--budget", type=float, default=float("inf"), help="the session's deadline in seconds")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with PredicateServer(Path(args.case).read_text(encoding="utf-8"), jobs=args.jobs, timeout_s=args.timeout) as server:
        print(json.dumps(server.describe()), flush=True)
        if not server.reproducible:
            print("the case does not reproduce here: nothing to serve", file=sys.stderr)
            return 1
        server.begin("manual", args.budget)
        print(f"PT2_BENCH_SOCKET={server.serve()}", flush=True)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        print(json.dumps(server.end().counts()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
