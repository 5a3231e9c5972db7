"""Webhook intake under concurrency: every delivery becomes exactly one job, however many arrive at
once and however often GitHub redelivers; an acknowledged delivery is already on disk; a store that
cannot take it answers 503 rather than making GitHub wait."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

import bot.app.store.recorder
from bot.app.store import REPLAY_WINDOW_S, DeliveryRecord, DeliveryRecorder, NewJob, Replayed, Store, StoreBusy
from bot.app.intake import parse_delivery, route, signature_for

from .conftest import SECRET, webhook_payload

ROOT = Path(__file__).resolve().parents[3]


def labeled(number: int) -> dict:
    payload = webhook_payload("issues_labeled")
    return payload | {"issue": payload["issue"] | {"number": number}}


def job(number: int) -> NewJob:
    return NewJob(kind="issues", repo="octo-org/octo-repo", payload={"n": number}, number=number)


def test_many_threads_delivering_at_once_make_exactly_one_job_per_delivery(app, deliver):
    ids = [str(uuid.uuid4()) for _ in range(120)]
    sends = [(delivery_id, number) for number, delivery_id in enumerate(ids)]
    sends += sends[::3]  # redeliveries, racing their originals
    with ThreadPoolExecutor(24) as pool:
        responses = list(pool.map(lambda send: deliver(labeled(send[1]), "issues", delivery_id=send[0]), sends))
    statuses = [response.status_code for response in responses]
    assert statuses.count(202) == len(ids) and statuses.count(200) == len(sends) - len(ids)
    assert {r.json["status"] for r in responses if r.status_code == 200} == {"duplicate"}
    store = app.extensions["pt2_triage"].services.store
    accepted = {r.json["job"] for r in responses if r.status_code == 202}
    assert len(accepted) == len(ids)  # each 202 names its own job
    assert store.job_counts() == {"queued": len(ids)}
    assert sorted(store.job(job_id).delivery_id for job_id in accepted) == sorted(ids)
    assert app.extensions["pt2_triage"].recorder.batches < len(ids)  # committed in groups


def test_record_deliveries_decides_duplicates_inside_a_batch_and_against_the_table(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    [first] = store.record_deliveries([DeliveryRecord("a", "issues", "labeled", job(1))])
    results = store.record_deliveries([
        DeliveryRecord("a", "issues", "labeled", job(1)),   # seen before
        DeliveryRecord("b", "issues", "labeled", job(2)),
        DeliveryRecord("b", "issues", "labeled", job(2)),   # twice in this batch
        DeliveryRecord("c", "ping", None, None),            # acknowledged, no job
        DeliveryRecord("d", "issues", "labeled", job(4)),
    ])
    assert first and results[0] is None and results[1] and results[2] is None and results[3] is None and results[4]
    assert store.job_counts() == {"queued": 3}
    assert store.seen_delivery("c") and store.job(results[1]).payload == {"n": 2}
    assert store.record_deliveries([DeliveryRecord("c", "ping", None, None)]) == [None]


def test_the_job_stores_the_signed_body_as_sent(tmp_path):
    body = json.dumps(labeled(5), indent=1, ensure_ascii=False).encode()  # not how json.dumps would say it
    headers = {"x-hub-signature-256": signature_for(SECRET, body), "x-github-delivery": "d1", "x-github-event": "issues"}
    delivery = parse_delivery(headers, body, (SECRET,))
    new_job = route(delivery, "pt2-triage")
    assert new_job.payload_json == body.decode()
    store = Store(str(tmp_path / "app.sqlite3"))
    job_id = store.record_delivery(delivery.id, delivery.event, delivery.action, new_job)
    with closing(sqlite3.connect(store.path)) as database:  # the file, as another process reads it
        [(stored,)] = database.execute("SELECT payload FROM jobs WHERE id = ?", (job_id,)).fetchall()
    assert stored == body.decode() and store.job(job_id).payload == labeled(5)


def test_recorder_groups_concurrent_deliveries_into_few_commits(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    recorder = DeliveryRecorder(store)
    start = threading.Barrier(40)

    def record(number: int) -> str | None:
        start.wait()
        return recorder.record(f"d{number}", "issues", "labeled", job(number))

    with ThreadPoolExecutor(40) as pool:
        job_ids = list(pool.map(record, range(40)))
    assert len(set(job_ids)) == 40 and None not in job_ids
    assert recorder.batches < 40
    assert Store(str(tmp_path / "app.sqlite3")).job_counts() == {"queued": 40}


def test_a_locked_store_gets_503_with_retry_after_and_the_redelivery_one_job(make_app, deliver, monkeypatch):
    monkeypatch.setattr(bot.app.store.recorder, "INTAKE_BUSY_TIMEOUT_S", 0.2)
    app = make_app()
    store = app.extensions["pt2_triage"].services.store
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock for too long
    try:
        refused = deliver("issues_labeled", delivery_id="held-up", client=app)
    finally:
        blocker.execute("ROLLBACK")
    assert refused.status_code == 503 and refused.headers["Retry-After"].isdigit()
    assert store.job_counts() == {} and not store.seen_delivery("held-up")
    redelivered = deliver("issues_labeled", delivery_id="held-up", client=app)
    assert redelivered.status_code == 202 and store.job_counts() == {"queued": 1}
    assert deliver("issues_labeled", delivery_id="held-up", client=app).json["status"] == "duplicate"


def test_a_commit_slower_than_the_wait_is_a_store_busy_not_a_hang(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    recorder = DeliveryRecorder(store, wait_s=0.1, busy_timeout_s=5)
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusy):
            recorder.record("late", "issues", "labeled", job(1))
    finally:
        blocker.execute("COMMIT")
    # the intake thread got the lock after all: the delivery is in, and a redelivery is a duplicate.
    # The redelivery waits as long as a webhook request would: the thread's busy handler may sleep
    # up to 100 ms before it sees the lock free, longer than this test's 0.1 s on a loaded machine.
    recorder.wait_s = 5
    assert recorder.record("late", "issues", "labeled", job(1)) is None
    assert store.job_counts() == {"queued": 1}


def test_an_acknowledged_delivery_survives_the_process_dying_right_after_the_2xx(tmp_path, settings):
    """The 202 is sent after the commit: kill the process at once and the job is there."""
    body = json.dumps(labeled(77)).encode()
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from bot.app.factory import create_app
from bot.app.settings import Settings
app = create_app(Settings(webhook_secret={SECRET!r}, db_path={settings.db_path!r}, workers=0), start_workers=False)
response = app.test_client().post("/webhook", data={body!r}, headers={{
    "X-GitHub-Event": "issues", "X-GitHub-Delivery": "acked-then-killed",
    "X-Hub-Signature-256": {signature_for(SECRET, body)!r}}})
print(response.status_code, flush=True)
os._exit(0)  # no clean shutdown: nothing gets flushed or closed after the answer
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "202", done.stderr[-2000:]
    store = Store(settings.db_path)
    assert store.seen_delivery("acked-then-killed") and store.job_counts() == {"queued": 1}
    job = store.claim("after-the-crash", lease_s=60)
    assert job.delivery_id == "acked-then-killed" and job.number == 77


def test_concurrent_claims_never_hand_out_a_job_twice(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    store.record_deliveries([DeliveryRecord(f"d{n}", "issues", "labeled", job(n)) for n in range(60)])
    claimed: list[str] = []

    def work(owner: str) -> None:
        while (taken := store.claim(owner, lease_s=60)) is not None:
            claimed.append(taken.id)
            store.finish(taken)

    threads = [threading.Thread(target=work, args=(f"w{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == 60 and len(set(claimed)) == 60
    assert store.job_counts() == {"done": 60}


def test_claim_resumes_an_abandoned_job_before_new_ones(tmp_path):
    now = [1000.0]
    store = Store(str(tmp_path / "app.sqlite3"), clock=lambda: now[0])
    [older] = store.record_deliveries([DeliveryRecord("old", "issues", "labeled", job(1))])
    now[0] += 1
    store.record_deliveries([DeliveryRecord("new", "issues", "labeled", job(2))])
    abandoned = store.claim("dead-worker", lease_s=30)
    assert abandoned.id == older and abandoned.attempts == 1
    now[0] += 31  # its lease ran out
    resumed = store.claim("next-worker", lease_s=30)
    assert resumed.id == older and resumed.attempts == 2
    assert store.claim("next-worker", lease_s=30).delivery_id == "new"
    assert store.claim("next-worker", lease_s=30) is None


# -- replays: a captured signed body sent again under a new delivery id

def test_a_captured_body_replayed_under_a_new_delivery_id_makes_no_second_job(app, deliver, fake):
    captured = labeled(12)
    assert deliver(captured, "issues", delivery_id="from-github").status_code == 202
    replayed = deliver(captured, "issues", delivery_id="from-an-attacker")
    assert replayed.status_code == 409 and "already delivered" in replayed.json["error"]
    redelivered = deliver(captured, "issues", delivery_id="from-github")  # GitHub's redelivery keeps the id
    assert redelivered.status_code == 200 and redelivered.json["status"] == "duplicate"
    store = app.extensions["pt2_triage"].services.store
    assert store.job_counts() == {"queued": 1} and not store.seen_delivery("from-an-attacker")
    assert app.extensions["pt2_triage"].drain() == 1
    assert len(fake.bot_comments_on(12)) == 1 and len(fake.dispatches) == 1


def test_replays_racing_each_other_make_one_job(app, deliver):
    captured = labeled(31)
    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(lambda n: deliver(captured, "issues", delivery_id=f"copy-{n}"), range(48)))
    assert sorted(r.status_code for r in responses) == [202] + [409] * 47
    assert app.extensions["pt2_triage"].services.store.job_counts() == {"queued": 1}


def test_a_body_is_remembered_for_the_replay_window_per_event(tmp_path):
    now = [1000.0]
    store = Store(str(tmp_path / "app.sqlite3"), clock=lambda: now[0])
    body_sha256 = "ab" * 32

    def record(delivery_id: str, event: str = "issues") -> DeliveryRecord:
        return DeliveryRecord(delivery_id, event, "labeled", job(1), body_sha256)

    [first] = store.record_deliveries([record("x")])
    replay, redelivery, other_event = store.record_deliveries([record("y"), record("x"), record("z", "workflow_run")])
    assert first and replay == Replayed("x") and redelivery is None and other_event
    assert not store.seen_delivery("y")
    now[0] += REPLAY_WINDOW_S - 1
    assert store.record_delivery("y", "issues", "labeled", job(1), body_sha256) == Replayed("x")
    now[0] += 2  # past the window: the body is taken as new, and then guarded for the new id
    assert isinstance(store.record_delivery("y", "issues", "labeled", job(1), body_sha256), str)
    assert store.record_delivery("w", "issues", "labeled", job(1), body_sha256) == Replayed("y")
    assert store.record_delivery("x", "issues", "labeled", job(1), body_sha256) is None  # still a duplicate
    assert store.job_counts() == {"queued": 3}


def test_the_first_of_two_copies_in_one_batch_wins(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    copies = [DeliveryRecord(delivery_id, "issues", "labeled", job(1), "cd" * 32) for delivery_id in ("a", "b", "a")]
    first, second, again = store.record_deliveries(copies)
    assert isinstance(first, str) and second == Replayed("a") and again is None
    assert store.job_counts() == {"queued": 1}
