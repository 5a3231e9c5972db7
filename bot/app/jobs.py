"""Job workers: take jobs from the store's queue and run the features their event is for, off the
request path.

A job is one delivery's event (its kind is the event's name, the action is in the payload). Each
feature routed to it parses it, observes, decides and acts (bot/app/features); a feature's steps
checkpoint the job, so a job retried after a failure redoes none of the writes it already made.

A failed job is retried with backoff when the failure is transient (GitHub 5xx, rate limits,
network), at the time GitHub names for rate limits; other failures are retried a few times and
then recorded as failed with their error. A worker that dies leaves its job leased; when the lease
expires any worker (in this process or a restarted one) resumes it from its last checkpoint.
"""
from __future__ import annotations

import logging
import os
import socket
import threading

from types import ModuleType

from bot.app import features
from bot.app.context import JobContext, Services
from bot.app.event import Event
from bot.app.github import GitHubError, RateLimited
from bot.app.store import Job

log = logging.getLogger("pt2_triage.worker")

MAX_ATTEMPTS = 8
MAX_ATTEMPTS_FOR_BUGS = 3
BACKOFF_S = (5, 30, 120, 600, 1800)
POLL_S = 0.25  # a separate worker process learns of new jobs by polling the store


def retry_time(job: Job, error: Exception, now: float) -> float | None:
    """When to try a failed job again, or None to give up (pure)."""
    if isinstance(error, RateLimited):
        return error.retry_at if job.attempts < MAX_ATTEMPTS else None
    transient = isinstance(error, GitHubError) and error.transient
    limit = MAX_ATTEMPTS if transient else MAX_ATTEMPTS_FOR_BUGS
    if job.attempts >= limit:
        return None
    return now + BACKOFF_S[min(job.attempts - 1, len(BACKOFF_S) - 1)]


class JobRunner:
    """Runs claimed jobs; `drain` processes everything ready now (tests and one-shot use)."""

    def __init__(self, services: Services, owner: str | None = None):
        self.services = services
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"

    def run_one(self) -> bool:
        job = self.services.store.claim(self.owner, self.services.lease_s)
        if job is None:
            return False
        self.process(job)
        return True

    def drain(self, limit: int = 10_000) -> int:
        count = 0
        while count < limit and self.run_one():
            count += 1
        return count

    def process(self, job: Job) -> None:
        store = self.services.store
        event = Event(job.kind, job.payload.get("action"), job.payload, self.services.settings.bot_name)
        routed = features.for_event(event.name, event.action)
        if not routed:
            store.finish(job, f"no feature for {event.name}.{event.action}")
            return
        context = JobContext(self.services, job, self.services.github_for(job.installation_id))
        try:
            for feature in routed:
                run_feature(feature, event, context)
        except Exception as error:  # noqa: BLE001 - every failure is recorded on the job
            at = retry_time(job, error, self.services.clock())
            summary = f"{type(error).__name__}: {error}"[:1000]
            if at is None:
                log.exception("job %s (%s, %s#%s) failed for good after %d attempts", job.id, job.kind, job.repo,
                              job.number, job.attempts)
                store.finish(job, summary)
            else:
                log.warning("job %s (%s, %s#%s) attempt %d failed (%s); retrying at %.0f", job.id, job.kind,
                            job.repo, job.number, job.attempts, summary, at)
                store.retry_later(job, at, summary)
            return
        store.finish(job)
        log.info("job %s (%s, %s#%s) done", job.id, job.kind, job.repo, job.number)


def run_feature(feature: ModuleType, event: Event, context: JobContext) -> None:
    """parse -> observe -> decide -> act, for one feature and one job."""
    parsed = feature.parse(event)
    if parsed is None:
        return
    plan = feature.decide(parsed, feature.observe(parsed, context))
    if not plan.steps:
        log.info("job %s (%s#%s) %s: nothing to do: %s", context.job.id, context.repo, context.job.number,
                 features.feature_name(feature), plan.reason)
    feature.act(plan, context.gh, context.store)


class WorkerPool:
    """Threads that run jobs until stopped; `wake()` after enqueueing skips the poll wait."""

    def __init__(self, services: Services, count: int):
        self.services = services
        self.count = count
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for index in range(self.count):
            thread = threading.Thread(target=self._loop, name=f"pt2-triage-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)

    def _loop(self) -> None:
        runner = JobRunner(self.services)
        while not self._stop.is_set():
            try:
                worked = runner.run_one()
            except Exception:  # noqa: BLE001 - a store hiccup must not kill the worker
                log.exception("worker loop error")
                worked = False
            if not worked:
                self._wake.wait(POLL_S)
                self._wake.clear()
