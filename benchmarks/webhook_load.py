"""Webhook load: a real App server process on loopback under 2,000 signed deliveries from 50 clients.

GitHub is a local stub (the tests' fake GitHub served over HTTP, `PT2_TRIAGE_GITHUB_API`), and a
`pt2-triage worker` process runs the jobs next to the web process (`PT2_TRIAGE_WORKERS=0`), so each
delivery's job really runs: App token, repo config, the verdict comment, the dispatch. Measured:
ack latency (p50/p99) and throughput at the webhook, how long the workers take to drain the queue,
and whether every delivery became exactly one job (redeliveries of 5% of them must not). The same
load runs against the production server (waitress) and, as the baseline, Werkzeug's threaded
development server.

The 50 clients are keep-alive connections spread over a few processes, each sending its next
delivery as soon as the last is answered (a closed loop: p50 is about clients / throughput). The
servers' logs go to files: a pipe nobody reads fills up and then blocks the server on its next log
line (that froze waitress, whose I/O thread logs queue-depth warnings, after ~1,500 deliveries).

    .venv/bin/python benchmarks/webhook_load.py [--deliveries 2000] [--clients 50] [--servers waitress,werkzeug]
                                                [--threads N]

Target: p99 ack < 100 ms, zero lost or duplicated jobs.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.app.intake import signature_for  # noqa: E402
from tests.fakes.github import FakeGitHub  # noqa: E402

SECRET = "benchmark-secret"
FIXTURE = ROOT / "tests" / "bot" / "fixtures" / "webhooks" / "issues_labeled.json"
THREADS = 32  # as README recommends and `pt2-triage serve` uses
CLIENT_PROCESSES = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_fake_github(fake: FakeGitHub, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            status, headers, data = fake.handle(self.command, fake.api + self.path, body)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def private_key(path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def start_app(server: str, port: int, env: dict, log_path: Path, threads: int) -> subprocess.Popen:
    """The server's log goes to a file: a pipe nobody reads fills after 64 KiB and then blocks the
    server's logging call (waitress logs queue-depth warnings from its I/O thread: the whole server
    stops)."""
    if server == "waitress":
        command = [sys.executable, "-m", "waitress", "--host=127.0.0.1", f"--port={port}", f"--threads={threads}",
                   "--call", "bot.app.factory:create_app"]
    else:
        command = [sys.executable, "-c", "from bot.app.factory import create_app; "
                   f"create_app().run(host='127.0.0.1', port={port}, threaded=True)"]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                return process
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{server} did not start: {log_path.read_text(errors='replace')[-2000:]}")


def deliveries(count: int, redeliver_share: float) -> list[tuple[str, bytes]]:
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    sent = []
    for index in range(count):
        payload = dict(template, issue=dict(template["issue"], number=1000 + index))
        sent.append((str(uuid.uuid4()), json.dumps(payload).encode()))
    redeliveries = sent[: int(count * redeliver_share)]
    return sent + redeliveries  # GitHub's "redeliver" reuses the delivery id


def run_load(server: str, count: int, clients: int, threads: int) -> dict:
    fake_port, app_port = free_port(), free_port()
    fake = FakeGitHub(api=f"http://127.0.0.1:{fake_port}")
    fake.permissions["maintainer"] = "triage"  # the fixture's labeler: a member, so each label starts a run
    stub = serve_fake_github(fake, fake_port)
    with tempfile.TemporaryDirectory() as scratch:
        key_path, db_path = Path(scratch) / "app.pem", Path(scratch) / "app.sqlite3"
        private_key(key_path)
        env = {**os.environ, "PT2_TRIAGE_WEBHOOK_SECRET": SECRET, "PT2_TRIAGE_APP_ID": "1",
               "PT2_TRIAGE_PRIVATE_KEY": str(key_path), "PT2_TRIAGE_DB": str(db_path),
               "PT2_TRIAGE_GITHUB_API": fake.api, "PT2_TRIAGE_WORKERS": "4", "PYTHONPATH": str(ROOT)}
        server_log, worker_log = Path(scratch) / "server.log", Path(scratch) / "worker.log"
        process = start_app(server, app_port, {**env, "PT2_TRIAGE_WORKERS": "0"}, server_log, threads)
        with open(worker_log, "wb") as log_file:
            worker = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--threads", "4"], env=env,
                                      cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            result = _drive(app_port, db_path, deliveries(count, 0.05), clients, count)
        finally:
            for child in (process, worker):
                child.terminate()
                child.wait(10)
            stub.shutdown()
    comments_per_issue = {}
    for comment in fake.comments.values():
        comments_per_issue[comment["issue"]] = comments_per_issue.get(comment["issue"], 0) + 1
    result.update(server=server, comments=len(fake.comments), issues_commented=len(comments_per_issue),
                  issues_with_two_comments=sum(1 for n in comments_per_issue.values() if n > 1),
                  dispatches=len(fake.dispatches), tokens_issued=fake.tokens_issued)
    return result


def _signed_request(port: int, delivery_id: str, body: bytes) -> bytes:
    """The POST as GitHub sends it, built before the clock starts (GitHub signs before it sends)."""
    head = (f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"X-GitHub-Event: issues\r\nX-GitHub-Delivery: {delivery_id}\r\nContent-Type: application/json\r\n"
            f"X-Hub-Signature-256: {signature_for(SECRET, body)}\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("ascii") + body


def _read_response(sock: socket.socket, pending: bytearray) -> tuple[int, bool]:
    """Status and whether the server closes the connection; consumes exactly one response."""
    while (end := pending.find(b"\r\n\r\n")) < 0:
        pending += _received(sock)
    head = bytes(pending[:end]).decode("latin-1").lower()
    fields = dict(line.split(":", 1) for line in head.split("\r\n")[1:] if ":" in line)
    if "content-length" not in fields:
        raise ConnectionError("response without Content-Length")
    total = end + 4 + int(fields["content-length"])
    while len(pending) < total:
        pending += _received(sock)
    del pending[:total]
    return int(head.split(" ", 2)[1]), fields.get("connection", "").strip() == "close"


def _received(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("server closed the connection")
    return chunk


def _send_lane(port: int, lane: list[tuple[str, bytes]], outcomes: list) -> None:
    """One client: a keep-alive connection that sends its deliveries one after another. Plain
    sockets, not an HTTP library: the load generator shares the 2 cores with the server, and every
    millisecond it spends is one the server does not get (and is counted as ack latency)."""
    signed = [_signed_request(port, delivery_id, body) for delivery_id, body in lane]
    sock, pending = None, bytearray()
    for request in signed:
        started = time.perf_counter()
        try:
            if sock is None:
                sock, pending = socket.create_connection(("127.0.0.1", port), timeout=30), bytearray()
            sock.sendall(request)
            status, closing = _read_response(sock, pending)
        except OSError as exc:  # counted as not acknowledged, not fatal (timeouts are OSErrors too)
            status, closing = type(exc).__name__, True
        outcomes.append((time.perf_counter() - started, status))
        if closing and sock is not None:
            sock.close()
            sock = None
    if sock is not None:
        sock.close()


def _client_process(port: int, lanes: list[list[tuple[str, bytes]]], start_at: float) -> tuple[list, float, float]:
    """Several clients in one process; the load is spread over processes so that the load
    generator's own GIL does not add to the latencies it measures."""
    time.sleep(max(0.0, start_at - time.time()))
    started = time.time()
    outcomes: list = []
    threads = [threading.Thread(target=_send_lane, args=(port, lane, outcomes)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes, started, time.time()


def _drive(port: int, db_path: Path, batch: list[tuple[str, bytes]], clients: int, unique: int) -> dict:
    lanes = [batch[index::clients] for index in range(clients)]
    processes = min(CLIENT_PROCESSES, clients)
    start_at = time.time() + 3  # every client process is up and imported by then
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_client_process, port, lanes[index::processes], start_at)
                   for index in range(processes)]
        parts = [future.result() for future in futures]
    outcomes = [outcome for part, _, _ in parts for outcome in part]
    wall = max(ended for _, _, ended in parts) - min(started for _, started, _ in parts)
    latencies = sorted(seconds for seconds, _ in outcomes)
    statuses = {}
    for _, status in outcomes:
        statuses[status] = statuses.get(status, 0) + 1
    drain_started = time.perf_counter()
    db = sqlite3.connect(db_path)
    while time.perf_counter() - drain_started < 120:
        pending = db.execute("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()[0]
        if pending == 0:
            break
        time.sleep(0.2)
    drain_s = time.perf_counter() - drain_started
    jobs = db.execute("SELECT COUNT(*), COUNT(DISTINCT delivery_id) FROM jobs").fetchone()
    states = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    errors = [row[0][:300] for row in db.execute("SELECT DISTINCT error FROM jobs WHERE error IS NOT NULL LIMIT 3")]
    return {"sent": len(batch), "unique_deliveries": unique, "statuses": statuses,
            "p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
            "max_ms": 1000 * latencies[-1], "throughput_rps": len(batch) / wall, "send_wall_s": wall,
            "jobs": jobs[0], "distinct_job_deliveries": jobs[1], "job_states": states,
            "lost": unique - jobs[1], "duplicated": jobs[0] - jobs[1], "drain_s": drain_s, "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--servers", default="waitress,werkzeug")
    parser.add_argument("--threads", type=int, default=THREADS, help=f"waitress threads (default {THREADS})")
    args = parser.parse_args()
    results = [run_load(server, args.deliveries, args.clients, args.threads) for server in args.servers.split(",")]
    rows = [("server", "server"), ("sent (incl. 5% redeliveries)", "sent"), ("HTTP statuses", "statuses"),
            ("ack p50 ms", "p50_ms"), ("ack p99 ms", "p99_ms"), ("ack max ms", "max_ms"),
            ("throughput deliveries/s", "throughput_rps"), ("jobs", "jobs"), ("lost", "lost"),
            ("duplicated", "duplicated"), ("job states", "job_states"), ("queue drained in s", "drain_s"),
            ("comments", "comments"), ("issues with 2 comments", "issues_with_two_comments"),
            ("dispatches", "dispatches"), ("installation tokens", "tokens_issued")]
    for r in results:
        for error in r["errors"]:
            print(f"{r['server']}: job error: {error}")
    for label, key in rows:
        cells = [f"{r[key]:.1f}" if isinstance(r[key], float) else str(r[key]) for r in results]
        print(f"{label:32}" + "".join(f"{cell:>34}" for cell in cells))
    ok = all(r["lost"] == 0 and r["duplicated"] == 0 and r["p99_ms"] < 100 and r["dispatches"] == r["unique_deliveries"]
             and r["issues_with_two_comments"] == 0 for r in results if r["server"] == "waitress")
    print("target (waitress): p99 < 100 ms, no lost or duplicated jobs:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
