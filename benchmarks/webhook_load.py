"""Webhook load: a real App server process on loopback under 2,000 signed deliveries from 50 clients.

GitHub is a local stub (the tests' fake GitHub served over HTTP, `PT2_TRIAGE_GITHUB_API`), and a
`pt2-triage worker` process runs the jobs next to the web process (`PT2_TRIAGE_WORKERS=0`), so each
delivery's job really runs: App token, repo config, the verdict comment, the dispatch. Measured:
ack latency (p50/p99) and throughput at the webhook, how long the workers take to drain the queue,
and whether every delivery became exactly one job (redeliveries of 5% of them must not). The same
load runs against the production server (waitress) and, as the baseline, Werkzeug's threaded
development server.

    .venv/bin/python benchmarks/webhook_load.py [--deliveries 2000] [--clients 50] [--servers waitress,werkzeug]

Target: p99 ack < 100 ms, zero lost or duplicated jobs.
"""
from __future__ import annotations

import argparse
import json
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
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.webhooks import signature_for  # noqa: E402
from tests.bot.app.fake_github import FakeGitHub  # noqa: E402

SECRET = "benchmark-secret"
FIXTURE = ROOT / "tests" / "bot" / "fixtures" / "webhooks" / "issues_labeled.json"


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


def start_app(server: str, port: int, env: dict) -> subprocess.Popen:
    if server == "waitress":
        command = [sys.executable, "-m", "waitress", "--host=127.0.0.1", f"--port={port}", "--threads=16",
                   "--call", "bot.app:create_app"]
    else:
        command = [sys.executable, "-c", "from bot.app import create_app; "
                   f"create_app().run(host='127.0.0.1', port={port}, threaded=True)"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                return process
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{server} did not start: {process.stderr.read().decode()[-2000:]}")


def deliveries(count: int, redeliver_share: float) -> list[tuple[str, bytes]]:
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    sent = []
    for index in range(count):
        payload = dict(template, issue=dict(template["issue"], number=1000 + index))
        sent.append((str(uuid.uuid4()), json.dumps(payload).encode()))
    redeliveries = sent[: int(count * redeliver_share)]
    return sent + redeliveries  # GitHub's "redeliver" reuses the delivery id


def run_load(server: str, count: int, clients: int) -> dict:
    fake_port, app_port = free_port(), free_port()
    fake = FakeGitHub(api=f"http://127.0.0.1:{fake_port}")
    stub = serve_fake_github(fake, fake_port)
    with tempfile.TemporaryDirectory() as scratch:
        key_path, db_path = Path(scratch) / "app.pem", Path(scratch) / "app.sqlite3"
        private_key(key_path)
        env = {**os.environ, "PT2_TRIAGE_WEBHOOK_SECRET": SECRET, "PT2_TRIAGE_APP_ID": "1",
               "PT2_TRIAGE_PRIVATE_KEY": str(key_path), "PT2_TRIAGE_DB": str(db_path),
               "PT2_TRIAGE_GITHUB_API": fake.api, "PT2_TRIAGE_WORKERS": "4", "PYTHONPATH": str(ROOT)}
        process = start_app(server, app_port, {**env, "PT2_TRIAGE_WORKERS": "0"})
        worker = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--threads", "4"], env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def _drive(port: int, db_path: Path, batch: list[tuple[str, bytes]], clients: int, unique: int) -> dict:
    url = f"http://127.0.0.1:{port}/webhook"
    local = threading.local()

    def send(item):
        delivery_id, body = item
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        headers = {"X-GitHub-Event": "issues", "X-GitHub-Delivery": delivery_id, "Content-Type": "application/json",
                   "X-Hub-Signature-256": signature_for(SECRET, body), "User-Agent": "GitHub-Hookshot/bench"}
        started = time.perf_counter()
        try:
            status = session.post(url, data=body, headers=headers, timeout=30).status_code
        except requests.RequestException as exc:  # counted, not fatal: GitHub would redeliver
            status = type(exc).__name__
        return time.perf_counter() - started, status

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        outcomes = list(pool.map(send, batch))
    wall = time.perf_counter() - started
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
    args = parser.parse_args()
    results = [run_load(server, args.deliveries, args.clients) for server in args.servers.split(",")]
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
