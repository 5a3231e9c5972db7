"""Several warm workers for runs in parallel (one run per worker at a time)."""
from __future__ import annotations

import queue

from .sandbox import RunResult, RunSpec
from .worker import WarmWorker


class WarmPool:
    def __init__(self, size: int, **worker_options):
        self.workers = [WarmWorker(**worker_options) for _ in range(max(1, size))]
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

    def run(self, spec: RunSpec, cuda: bool = False) -> RunResult:
        worker = self.free.get()
        try:
            return worker.run(spec, cuda)
        finally:
            self.free.put(worker)
