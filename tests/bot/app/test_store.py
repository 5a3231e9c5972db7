"""The store through its public API only: what a feature, a worker or the intake may rely on."""
from __future__ import annotations

import json
import threading

import pytest

from bot.app.store import DeliveryRecord, NewJob, Replayed, Store

REPO = "octo-org/octo-repo"


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path, clock) -> Store:
    return Store(str(tmp_path / "app.sqlite3"), clock=clock)


def new_job(number: int = 12, kind: str = "issues") -> NewJob:
    return NewJob(kind=kind, repo=REPO, payload={"action": "labeled", "issue": {"number": number}},
                  installation_id=7, number=number)


# -- deliveries and jobs

def test_a_delivery_makes_one_job_and_a_redelivery_none(store):
    job_id = store.record_delivery("d1", "issues", "labeled", new_job())
    assert isinstance(job_id, str) and store.seen_delivery("d1")
    assert store.record_delivery("d1", "issues", "labeled", new_job()) is None
    job = store.job(job_id)
    assert (job.kind, job.repo, job.number, job.installation_id, job.delivery_id) == ("issues", REPO, 12, 7, "d1")
    assert job.payload == {"action": "labeled", "issue": {"number": 12}} and job.state == "queued"


def test_an_event_that_needs_no_job_is_remembered_all_the_same(store):
    assert store.record_delivery("ping-1", "ping", None, None) is None
    assert store.seen_delivery("ping-1") and store.job_counts() == {}


def test_the_same_body_under_a_new_delivery_id_is_a_replay(store):
    first = store.record_delivery("d1", "issues", "labeled", new_job(), body_sha256="ab" * 32)
    assert store.record_delivery("d2", "issues", "labeled", new_job(), body_sha256="ab" * 32) == Replayed("d1")
    assert first and not store.seen_delivery("d2")


def test_a_job_is_claimed_checkpointed_and_finished(store, clock):
    job_id = store.record_delivery("d1", "issues", "labeled", new_job())
    job = store.claim("worker-1", lease_s=60)
    assert job.id == job_id and job.state == "running" and job.attempts == 1
    assert store.claim("worker-2", lease_s=60) is None  # leased
    store.checkpoint(job, "pending_comment", lease_s=60, comment_id=5, stages=["pending_comment"])
    again = store.job(job_id)
    assert again.stage == "pending_comment" and again.progress == {"comment_id": 5, "stages": ["pending_comment"]}
    store.finish(job)
    assert store.job(job_id).state == "done" and store.job_counts() == {"done": 1}


def test_a_checkpoint_renews_the_lease(store, clock):
    store.record_delivery("d1", "issues", "labeled", new_job())
    job = store.claim("worker-1", lease_s=60)
    clock.now += 50
    store.checkpoint(job, "reacted", lease_s=60)
    clock.now += 50  # 100 s after the claim, 50 after the checkpoint
    assert store.claim("worker-2", lease_s=60) is None
    clock.now += 11
    assert store.claim("worker-2", lease_s=60).progress == {}


def test_a_failed_job_is_retried_later_or_recorded_as_failed(store, clock):
    first = store.record_delivery("d1", "issues", "labeled", new_job(1))
    second = store.record_delivery("d2", "issues", "labeled", new_job(2))
    job = store.claim("w", lease_s=60)
    store.retry_later(job, clock.now + 30, "GitHubError: 502")
    assert store.job(first).state == "queued" and store.job(first).error == "GitHubError: 502"
    other = store.claim("w", lease_s=60)
    assert other.id == second  # the retried one waits for its time
    store.finish(other, "ValueError: bad payload")
    assert store.job(second).state == "failed" and store.job(second).error == "ValueError: bad payload"
    clock.now += 30
    assert store.claim("w", lease_s=60).id == first


def test_a_batch_of_deliveries_is_recorded_at_once(store):
    results = store.record_deliveries([DeliveryRecord(f"d{n}", "issues", "labeled", new_job(n)) for n in range(5)])
    assert len(set(results)) == 5 and store.job_counts() == {"queued": 5}
    assert store.record_deliveries([]) == []


def test_each_thread_has_its_own_connection(store):
    errors = []

    def record(n: int) -> None:
        try:
            store.record_delivery(f"t{n}", "issues", "labeled", new_job(n))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and store.job_counts() == {"queued": 8}


def test_what_is_recorded_is_there_after_a_restart(tmp_path):
    path = str(tmp_path / "app.sqlite3")
    first = Store(path)
    job_id = first.record_delivery("d1", "issues", "labeled", new_job())
    first.remember_comment(REPO, 12, 555)
    first.close()
    restarted = Store(path)
    assert restarted.job(job_id).delivery_id == "d1" and restarted.comment_id(REPO, 12) == 555


# -- per-issue state

def test_comment_ids_are_remembered_per_purpose(store):
    assert store.comment_id(REPO, 12) is None
    store.remember_comment(REPO, 12, 101)
    store.remember_comment(REPO, 12, 202, "ci")
    store.remember_comment(REPO, 12, 102)  # the report comment was deleted and posted again
    assert store.comment_id(REPO, 12) == 102 and store.comment_id(REPO, 12, "ci") == 202
    assert store.comment_id(REPO, 13) is None


def test_overrides_are_per_issue_and_the_last_one_wins(store):
    store.set_override(REPO, 12, "category", "graph_break", "alice")
    store.set_override(REPO, 12, "category", "dynamic_shapes", "bob")
    store.set_override(REPO, 12, "test-file", "test/dynamo/test_repros.py", "bob")
    assert store.overrides(REPO, 12) == {"category": "dynamic_shapes", "test-file": "test/dynamo/test_repros.py"}
    assert store.overrides(REPO, 13) == {}


def test_a_notice_is_claimed_once_until_released(store):
    assert store.claim_notice(REPO, 12, "suggestion")
    assert not store.claim_notice(REPO, 12, "suggestion")
    assert store.claim_notice(REPO, 13, "suggestion") and store.claim_notice(REPO, 12, "config:abc")
    store.release_notice(REPO, 12, "suggestion")  # saying it failed: a retry may say it
    assert store.claim_notice(REPO, 12, "suggestion")


def test_the_latest_report_replaces_the_previous_one(store):
    assert store.latest_report(REPO, 12) is None
    store.save_report(REPO, 12, json.dumps({"run": 1}), run_id=1)
    store.save_report(REPO, 12, json.dumps({"run": 2}), run_id=2)
    assert json.loads(store.latest_report(REPO, 12)) == {"run": 2}


def test_runner_jobs_from_dispatch_to_completion(store, clock):
    store.add_runner_job("k1", REPO, 12, 7, "cpu", draft_pr=True, requested_by="alice")
    clock.now += 1
    store.add_runner_job("k2", REPO, 12, 7, "gpu", draft_pr=False, requested_by=None)
    store.add_runner_job("k2", REPO, 12, 7, "cpu", draft_pr=True, requested_by="x")  # a retry: kept as it was
    assert [job.job_key for job in store.runner_jobs_for(REPO, 12)] == ["k2", "k1"]  # newest first
    assert store.runner_job("k2").device == "gpu" and store.runner_job("k1").draft_pr
    assert store.complete_runner_job("k1", run_id=99, state="published")
    assert not store.complete_runner_job("k1", run_id=99, state="published")  # the same run, redelivered
    assert [job.job_key for job in store.pending_runner_jobs(REPO)] == ["k2"]
    done = store.runner_job("k1")
    assert (done.state, done.run_id) == ("published", 99) and store.runner_job("missing") is None


def test_fingerprints_count_occurrences_per_repository(store):
    assert store.record_fingerprint(REPO, "graph_break|Unsupported|x", "graph_break", "#12") == 1
    assert store.record_fingerprint(REPO, "graph_break|Unsupported|x", "graph_break", "#13") == 2
    assert store.record_fingerprint("other/repo", "graph_break|Unsupported|x", "graph_break", "#1") == 1
