"""Several warm workers for runs in parallel (one run per worker at a time).

The workers share one caches directory, so the runs of a job (one `RunSpec.cache_dir`) find its
compiled kernels whichever worker they land on; each run still sees only its own job's cache.
"""
from __future__ import annotations

import logging
import os
import queue
import tempfile
import threading
from contextlib import ExitStack

from . import safefs, sandbox
from .sandbox import RunResult, RunSpec
from .worker import WarmWorker, WorkerUnavailable, warm_safe_env

log = logging.getLogger(__name__)


class WarmPool:
    def __init__(self, size: int, **worker_options):
        given = worker_options.pop("cache_root", None)
        self._own_cache_root = given is None
        self.cache_root = given or tempfile.mkdtemp(prefix="pt2-pool-caches-")
        uid, gid, drop = sandbox.sandbox_owner()
        if drop:
            os.chown(self.cache_root, uid, gid)
        self.workers = [WarmWorker(cache_root=self.cache_root, **worker_options) for _ in range(max(1, size))]
        self.free: "queue.Queue[WarmWorker]" = queue.Queue()
        self._starts: list[threading.Thread] = []
        self._start_results: "queue.Queue[WorkerUnavailable | None]" = queue.Queue()

    def __enter__(self) -> "WarmPool":
        """Start every worker at once and return when the first is ready; the others join as they
        get ready. Started one after the other, a pool of two on 2 cores made the minimizer's first
        paired runs wait 7 s for the second worker after the first was ready."""
        self._starts = [threading.Thread(target=self._start, args=(worker,), name="warm-worker-start", daemon=True)
                        for worker in self.workers]
        for thread in self._starts:
            thread.start()
        problems = []
        for _ in self._starts:
            problem = self._start_results.get()
            if problem is None:
                return self
            problems.append(problem)
        self.close()
        raise problems[0]

    def _start(self, worker: WarmWorker) -> None:
        try:
            worker.start()
        except WorkerUnavailable as exc:
            log.warning("one warm worker of %d did not start: %s", len(self.workers), exc)
            self._start_results.put(exc)
            return
        except BaseException as exc:  # never leave __enter__ waiting
            self._start_results.put(WorkerUnavailable(f"cannot start the warm worker: {exc!r}"))
            raise
        self.free.put(worker)
        self._start_results.put(None)

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for thread in self._starts:
            thread.join()  # a worker still starting is closed once started, never half-way
        for worker in self.workers:
            worker.close()
        if self._own_cache_root and self.cache_root:
            safefs.remove_tree(self.cache_root)
            self.cache_root = None

    def run(self, spec: RunSpec, cuda: bool = False) -> RunResult:
        worker = self.free.get()
        try:
            return worker.run(spec, cuda)
        finally:
            self.free.put(worker)


def lazy_runner(stack: ExitStack, warm_workers: int):
    """A `RunSpec -> RunResult` callable: cold sandboxed runs (0 workers), or that many warm workers.

    The pool starts on the first run that could use it, or earlier in the background when the
    caller knows runs are coming (`runner.prewarm()`, while cold diagnostic runs go on); runs that
    must be cold never wait for it, and if it cannot start everything runs cold. `stack` owns it."""
    if warm_workers < 1:
        return sandbox.run
    pool: list = []
    ready = threading.Event()
    lock = threading.Lock()

    def start() -> None:
        try:
            pool.append(stack.enter_context(WarmPool(warm_workers, unsafe_no_sandbox=sandbox.unsafe_fallback_needed())).run)
        except WorkerUnavailable as exc:
            log.warning("warm workers unavailable (%s); running cold", exc)
            pool.append(sandbox.run)
        finally:
            ready.set()

    def prewarm() -> None:
        with lock:
            if not pool and not getattr(prewarm, "thread", None):
                prewarm.thread = threading.Thread(target=start, name="warm-pool-start", daemon=True)
                prewarm.thread.start()
                stack.callback(prewarm.thread.join)  # never leave a half-started pool behind

    def run(spec: RunSpec) -> RunResult:
        spec = sandbox.effective(spec)  # as the pool runs it, when the unsafe fallback is in use
        if spec.argv is not None or spec.gpu or not warm_safe_env(spec.env):
            return sandbox.run(spec)  # would run cold anyway: neither wait for the pool nor hold a worker
        prewarm()
        ready.wait()
        return pool[0](spec)

    run.prewarm = prewarm
    return run
