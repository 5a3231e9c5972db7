"""Real secrets, real listeners and both runners, for the hostile repros in this package.

Every test here runs a short attack script (no torch, so the suite stays fast) through
`sandbox.run` (cold) and through a `WarmWorker` (warm), then checks from the outside that nothing
was reached. The planted secrets are real: files of mode 600 owned by whoever runs the tests (so a
sandbox mapped to the same uid could read them if it could see them), a GITHUB_TOKEN in this
process's environment, a unix socket listener in the host's /tmp and a TCP listener on 127.0.0.1,
each recording every connection it gets.

CI runs this package as root; `test_as_unprivileged_user.py` runs it again as uid 1000.
"""
from __future__ import annotations

import os
import secrets as random_secrets
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runners import safefs
from runners.sandbox import RunResult, RunSpec, run
from runners.worker import WarmWorker


@dataclass
class Listener:
    """Accepts connections in a thread and counts them."""
    sock: socket.socket
    address: object
    connections: list = field(default_factory=list)

    def start(self) -> "Listener":
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()

        def accept() -> None:
            while not self._stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    continue
                self.connections.append(conn)
        self._thread = threading.Thread(target=accept, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@dataclass
class Planted:
    """What the attacks go for; `values` are strings that must never show up in a result."""
    home: Path  # a HOME-like directory: .ssh/id_rsa, .git-credentials (mode 600)
    other_job: Path  # another job's workdir, as the old sandbox left them in /tmp
    token: str
    unix_path: str
    abstract_name: str
    tcp_port: int
    listeners: list
    values: tuple

    def connections(self) -> int:
        return sum(len(listener.connections) for listener in self.listeners)


@pytest.fixture(scope="session")
def planted():
    marker = random_secrets.token_hex(8)
    base = Path(tempfile.mkdtemp(prefix="pt2-secrets-"))
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    ssh_key = f"SSHKEY-{marker}"
    credentials = f"https://user:CREDS-{marker}@github.com"
    (home / ".ssh" / "id_rsa").write_text(ssh_key)
    (home / ".git-credentials").write_text(credentials)
    for path in (home / ".ssh" / "id_rsa", home / ".git-credentials"):
        path.chmod(0o600)
    other_job = Path(tempfile.mkdtemp(prefix="pt2-sandbox-"))
    other_source = f"OTHERJOB-{marker}"
    (other_job / "repro.py").write_text(f"# {other_source}\n")
    token = f"ghp_TOKEN{marker}"
    old_token = os.environ.get("GITHUB_TOKEN")
    os.environ["GITHUB_TOKEN"] = token
    unix_path = str(base / "agent.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(unix_path)
    abstract_name = f"pt2-test-{marker}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    listeners = [Listener(unix, unix_path).start(), Listener(abstract, abstract_name).start(),
                 Listener(tcp, tcp.getsockname()).start()]
    yield Planted(home, other_job, token, unix_path, abstract_name, tcp.getsockname()[1], listeners,
                  (ssh_key, f"CREDS-{marker}", other_source, token))
    for listener in listeners:
        listener.close()
    if old_token is None:
        os.environ.pop("GITHUB_TOKEN", None)
    else:
        os.environ["GITHUB_TOKEN"] = old_token
    safefs.remove_tree(base)
    safefs.remove_tree(other_job)


@pytest.fixture(scope="session")
def warm_worker():
    with WarmWorker(preload=()) as worker:
        yield worker


@pytest.fixture(params=["cold", "warm"])
def runner(request):
    """Runs a RunSpec cold (`sandbox.run`) or warm (the session's WarmWorker), asserting warm ran warm."""
    if request.param == "cold":
        return run
    worker = request.getfixturevalue("warm_worker")

    def run_warm(spec: RunSpec) -> RunResult:
        result = worker.run(spec)
        assert result.warm, "expected a warm run"
        return result
    run_warm.worker = worker
    return run_warm


def leaked(result: RunResult, planted: Planted) -> list[str]:
    """The planted values found anywhere in a result."""
    text = f"{result.stdout}\n{result.stderr}\n{result.uncaught_exception}\n{result.env_used}"
    return [value for value in planted.values if value in text]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Make runs put their workdirs in a directory of this test's own (other tests, and other people's
    runs on a shared machine, come and go in the real /tmp), and return a function listing what is there
    now: fresh workdirs of cold runs, and the warm worker's runs directory."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))

    def left(worker=None) -> list[str]:
        found = sorted(p.name for p in private.iterdir())
        if worker is not None:
            found += sorted(p.name for p in worker.runs_dir.iterdir())
        return found
    return left
