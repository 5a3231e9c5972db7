"""The GitHub App: a Flask app factory that only wires the pieces together.

    POST /webhook   size -> verify -> parse -> route -> persist one job -> 202 (work happens in workers)
    GET  /healthz   store reachable, schema version, job counts

A body is never read before its declared length is known to be within GitHub's 25 MB, and never
past that limit (`read_body`), so an unsigned 500 MB request costs nothing but its headers.

The 202 is sent only after the delivery and its job are committed (fsynced) in the store, by the
intake's batching writer (store.DeliveryRecorder); if the store cannot take it within a few
seconds the answer is 503 with Retry-After, never a wait past GitHub's 10 s. GitHub does not
redeliver failed deliveries by itself: a 503 shows as failed in the App's "Recent Deliveries",
from where it can be redelivered (by hand or through the REST API).

Production: `waitress-serve --threads 32 --max-request-body-size 26214401 --call bot.app.factory:create_app`
(the size makes waitress answer 413 itself instead of spooling the body to disk first), or gunicorn with
`'bot.app.factory:create_app()'`, without --preload so each process starts its own workers). Settings come
from the environment (bot/app/settings.py). `pt2-triage serve` runs the same app. Jobs run in worker
threads of the web process (`PT2_TRIAGE_WORKERS`), or, for the lowest ack latency, in separate
`pt2-triage worker` processes with `PT2_TRIAGE_WORKERS=0` on the web side: they share the store.
"""
from __future__ import annotations

import logging
import time
from typing import IO, Callable

from flask import Flask, jsonify, request

from bot.core.classify import Classifier
from bot.app.github import AppCredentials, GitHub
from bot.core.graph_breaks import load_registry
from bot.app.context import Services
from bot.core.ruleset import load_ruleset
from bot.app.settings import Settings, settings_from_env
from bot.app.store import DeliveryRecorder, Replayed, Store, StoreBusy
from bot.app.intake import MAX_BODY_BYTES, Delivery, Refusal, length_refusal, parse_delivery, route
from bot.app.jobs import JobRunner, WorkerPool

log = logging.getLogger("pt2_triage.app")

EXTENSION = "pt2_triage"
RETRY_AFTER_S = 30
READ_CHUNK = 1 << 20


def github_factory(settings: Settings, clock: Callable[[], float] = time.time) -> Callable[[int | None], GitHub]:
    """Installation id -> a client holding that installation's (cached) token."""
    credentials = AppCredentials(settings.app_id, settings.private_key, settings.api_url, clock=clock) \
        if settings.app_id else None

    def client(installation_id: int | None) -> GitHub:
        if credentials is None or installation_id is None:
            raise RuntimeError("the App's id and private key are needed to act on an installation "
                               "(set PT2_TRIAGE_APP_ID and PT2_TRIAGE_PRIVATE_KEY)")
        return GitHub(settings.api_url, credentials.installation(installation_id), clock=clock,
                      bot_login=settings.bot_login)

    return client


def build_services(settings: Settings, *, store: Store | None = None,
                   github_for: Callable[[int | None], GitHub] | None = None, classifier: Classifier | None = None,
                   clock: Callable[[], float] = time.time) -> Services:
    """What the features need; shared by the web process and `pt2-triage worker` processes."""
    classifier = classifier or Classifier(load_ruleset(), load_registry())
    return Services(settings=settings, store=store or Store(settings.db_path, clock=clock),
                    github_for=github_for or github_factory(settings, clock), classifier=classifier,
                    registry=classifier.registry, clock=clock)


def create_app(settings: Settings | None = None, *, store: Store | None = None,
               github_for: Callable[[int | None], GitHub] | None = None, classifier: Classifier | None = None,
               start_workers: bool = True, clock: Callable[[], float] = time.time) -> Flask:
    settings = settings or settings_from_env()
    services = build_services(settings, store=store, github_for=github_for, classifier=classifier, clock=clock)
    store = services.store
    recorder = DeliveryRecorder(store)
    workers = WorkerPool(services, settings.workers)
    app = Flask("pt2_triage")
    app.extensions[EXTENSION] = AppState(services, workers, recorder)
    secrets = (settings.webhook_secret,)

    @app.post("/webhook")
    def webhook():
        headers = {key.lower(): value for key, value in request.headers.items()}
        parsed = length_refusal(headers) or parse_delivery(headers, read_body(request.stream), secrets)
        if isinstance(parsed, Refusal):
            log.warning("webhook refused (%s): %s", parsed.status, parsed.message)
            return jsonify(error=parsed.message), parsed.status
        return accept(parsed)

    def accept(delivery: Delivery):
        job = route(delivery, settings.bot_name)
        try:
            job_id = recorder.record(delivery.id, delivery.event, delivery.action, job, delivery.body_sha256)
        except StoreBusy as exc:
            log.warning("delivery %s not accepted, store busy: %s", delivery.id, exc)
            response = jsonify(error="the App's store is busy; redeliver this delivery", delivery=delivery.id)
            return response, 503, {"Retry-After": str(RETRY_AFTER_S)}
        if isinstance(job_id, Replayed):
            log.warning("delivery %s refused: the same %s body as delivery %s", delivery.id, delivery.event,
                        job_id.first_delivery_id)
            return jsonify(error="this body was already delivered under another delivery id",
                           delivery=delivery.id), 409
        if job_id is None:
            duplicate = job is not None
            return jsonify(status="duplicate" if duplicate else "ignored", delivery=delivery.id), 200
        workers.wake()
        log.info("delivery %s (%s.%s, %s) -> job %s", delivery.id, delivery.event, delivery.action, delivery.repo,
                 job_id)
        return jsonify(status="queued", delivery=delivery.id, job=job_id), 202

    @app.get("/healthz")
    def healthz():
        return jsonify(ok=True, schema_version=store.schema_version(), jobs=store.job_counts())

    if start_workers and settings.workers:
        workers.start()
    return app


def read_body(stream: IO[bytes], limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, but never more than `limit` + 1 bytes of it (one more than allowed, so an
    over-long body is seen as such), whatever the stream or the server: a read may return less
    than asked, so it is read in chunks."""
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(min(READ_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class AppState:
    """What tests and the CLI reach through `app.extensions["pt2_triage"]`."""

    def __init__(self, services: Services, workers: WorkerPool, recorder: DeliveryRecorder):
        self.services = services
        self.workers = workers
        self.recorder = recorder

    def drain(self) -> int:
        """Run every job that is ready now, in this thread (tests, and `serve --once` style use)."""
        return JobRunner(self.services, owner="drain").drain()

