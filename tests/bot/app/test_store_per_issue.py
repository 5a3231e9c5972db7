"""bot/app/store: one job at a time per issue. Two jobs on one issue (a label and a `classify`) run
together would each find no bot comment and each post one, so `claim` passes over a job whose issue
has another job running under a live lease; other issues' jobs go ahead meanwhile. The real store
(SQLite in a file, one connection per thread), as the App runs it."""
from __future__ import annotations

import threading
import time

from bot.app.store import DeliveryRecord, NewJob, Store

from .test_store import REPO, Clock, clock, store  # noqa: F401 (the store tests' fixtures: one SQLite file per test)


def enqueue(store: Store, clock: Clock, delivery_id: str, number: int | None, repo: str = REPO) -> str:
    """One job, a second after the previous one (so claim order is enqueue order)."""
    clock.now += 1
    job = NewJob(kind="issues", repo=repo, payload={"issue": {"number": number}}, installation_id=7, number=number)
    return store.record_delivery(delivery_id, "issues", "labeled", job)


def test_a_second_job_on_the_same_issue_waits_until_the_first_finishes(store, clock):
    label = enqueue(store, clock, "label", 12)
    classify = enqueue(store, clock, "classify", 12)
    running = store.claim("w1", lease_s=60)
    assert running.id == label
    assert store.claim("w2", lease_s=60) is None
    store.finish(running)
    assert store.claim("w2", lease_s=60).id == classify


def test_other_issues_and_jobs_without_an_issue_go_ahead_meanwhile(store, clock):
    enqueue(store, clock, "label-12", 12)
    enqueue(store, clock, "classify-12", 12)
    other_issue = enqueue(store, clock, "label-13", 13)
    same_number_elsewhere = enqueue(store, clock, "label-12-fork", 12, repo="someone/fork")
    workflow_run = enqueue(store, clock, "ci", None)
    second_run = enqueue(store, clock, "ci-2", None)
    store.claim("w1", lease_s=60)
    taken = [store.claim(f"w{n}", lease_s=60).id for n in range(2, 6)]
    assert taken == [other_issue, same_number_elsewhere, workflow_run, second_run]
    assert store.claim("w6", lease_s=60) is None


def test_a_dead_workers_job_resumes_first_and_still_holds_its_issue(store, clock):
    abandoned = enqueue(store, clock, "label", 12)
    waiting = enqueue(store, clock, "classify", 12)
    store.claim("dead-worker", lease_s=30)
    clock.now += 31  # its lease ran out: the issue is free, and the abandoned job goes first
    resumed = store.claim("w2", lease_s=30)
    assert resumed.id == abandoned and resumed.attempts == 2
    assert store.claim("w3", lease_s=30) is None
    store.finish(resumed)
    assert store.claim("w3", lease_s=30).id == waiting


def test_concurrent_workers_never_run_two_jobs_of_one_issue_at_once(tmp_path):
    store = Store(str(tmp_path / "app.sqlite3"))
    store.record_deliveries([DeliveryRecord(f"d{n}", "issues", "labeled",
                                            NewJob("issues", REPO, {}, 7, number=n % 3)) for n in range(30)])
    running: set[int] = set()
    overlaps: list[int] = []
    done: list[str] = []
    lock = threading.Lock()

    def work(owner: str) -> None:
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 1.0:  # others' issues may free up: poll like a worker
            job = store.claim(owner, lease_s=60)
            if job is None:
                time.sleep(0.001)
                continue
            with lock:
                if job.number in running:
                    overlaps.append(job.number)
                running.add(job.number)
            time.sleep(0.005)  # the job's GitHub calls
            with lock:
                running.discard(job.number)
                done.append(job.id)
            store.finish(job)
            idle_since = time.monotonic()

    threads = [threading.Thread(target=work, args=(f"w{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [] and len(done) == 30 and store.job_counts() == {"done": 30}
