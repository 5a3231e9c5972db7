"""Several warm workers for runs in parallel (one run per worker at a time).

The workers share one caches directory, so the runs of a job (one `RunSpec.cache_dir`) find its
compiled kernels whichever worker they land on; each run still sees only its own job's cache.
"""
from __future__ import annotations

import os
import queue
import tempfile

from . import safefs, sandbox
from .sandbox import RunResult, RunSpec
from .worker import WarmWorker


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

    def __enter__(self) -> "WarmPool":
        try:
            for worker in self.workers:
                worker.start()
                self.free.put(worker)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
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
