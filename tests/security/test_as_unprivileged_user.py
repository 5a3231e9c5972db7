"""This package again, as an unprivileged user (uid 1000, no groups).

As root the sandbox runs as uid 65534 outside, so file permissions already keep root's files away;
as an ordinary user it runs as that user outside, and only the filesystem allowlist keeps the
user's own files (mode 600 secrets included) out of reach. CI runs as root, so this test re-runs
the package under `setpriv`; it is skipped when not root or when already inside that re-run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from runners import safefs
from runners.sandbox import reachable_by

UID = GID = 1000
NESTED = "PT2_SECURITY_NESTED_RUN"
REPO = Path(__file__).resolve().parents[2]


def interpreter_for(uid: int) -> tuple[str, list[str]] | None:
    """(a python uid can run, extra sys.path entries it needs for pytest), or None."""
    ours = os.path.realpath(sys.executable)
    if reachable_by(ours, uid, uid) and os.access(ours, os.X_OK):
        return sys.executable, []
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None:
        return None
    probe = subprocess.run([system, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
    if probe.stdout.strip() != "%d.%d" % sys.version_info[:2]:
        return None
    return system, [sysconfig.get_paths()["purelib"]]  # pytest is pure Python: ours serves a same-version python


@pytest.mark.skipif(os.geteuid() != 0 or bool(os.environ.get(NESTED)), reason="needs root to switch users")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
def test_the_security_suite_passes_as_an_unprivileged_user():
    found = interpreter_for(UID)
    if found is None:
        pytest.skip("no python that uid 1000 can run with this python's version")
    python, extra_path = found
    if not (reachable_by(str(REPO / "tests" / "security" / "conftest.py"), UID, GID)):
        pytest.skip("the checkout is not readable by uid 1000")
    base = Path(tempfile.mkdtemp(prefix="pt2-security-user-", dir="/tmp"))
    try:
        os.chown(base, UID, GID)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(base), "USER": "pt2-test", "TMPDIR": str(base),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", NESTED: "1",
               "PYTHONPATH": os.pathsep.join([str(REPO), *extra_path])}
        command = ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups", python, "-m", "pytest", "-q",
                   "-p", "no:cacheprovider", f"--confcutdir={REPO / 'tests' / 'security'}", f"--basetemp={base / 'pytest'}",
                   "tests/security"]
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    finally:
        safefs.remove_tree(base)
    summary = result.stdout.strip().splitlines()[-1:] or [""]
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in summary[0] and "failed" not in summary[0], summary
