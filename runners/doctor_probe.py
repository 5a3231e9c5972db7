"""Facts about a runner for `pt2-triage doctor`: what the machine has, measured, with no verdicts.

Torch, CUDA and the compiler are probed in a sandboxed child (`probe.probe_machine`, so this
process never imports torch); the sandbox itself by starting one the way runs do and looking at it
from inside (`sandbox_facts`); disk where runs keep their workdirs and caches.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import cgroups, sandbox
from .probe import probe_machine

# Run inside a trial sandbox: what the run can see and do, as JSON on the last line.
SANDBOX_CHECK = r'''
import json, os, socket
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
facts = {"uid": os.getuid(), "cap_eff": status["CapEff"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
         "seccomp": status["Seccomp"].strip(), "processes_visible": len([p for p in os.listdir("/proc") if p.isdigit()])}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    facts["network"] = "reachable"
except OSError as exc:
    facts["network"] = exc.strerror or str(exc)
facts["root_entries"] = sorted(os.listdir("/"))
print(json.dumps(facts))
'''


def sandbox_facts(python: str = sys.executable) -> dict:
    """`bubblewrap` (path), `bubblewrap_version`, `sandbox_ok` and `sandbox_note` (a one-line fix when
    not ok), `sandbox_checks` (what a trial run saw from inside: uid, capabilities, no_new_privs,
    seccomp mode, network, visible processes) and `limits_mechanism`/`limits_note`."""
    found = sandbox.bubblewrap()
    facts = {"bubblewrap": found.path, "bubblewrap_version": found.version, "sandbox_ok": False,
             "sandbox_note": found.note}
    parent, note = cgroups.available()
    facts["limits_mechanism"] = "cgroup v2 + rlimit" if parent else "rlimit"
    facts["limits_note"] = note
    if not found.ok:
        return facts
    try:
        trial = sandbox.run(sandbox.RunSpec(script=SANDBOX_CHECK, python=python, timeout_s=60))
    except sandbox.SandboxUnavailable as exc:
        facts["sandbox_note"] = str(exc)
        return facts
    try:
        checks = json.loads(trial.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts["sandbox_note"] = f"a trial run in the sandbox failed ({trial.status}): {trial.stderr.strip()[-300:]}"
        return facts
    facts["sandbox_checks"] = checks
    problems = []
    if checks["uid"] != sandbox.SANDBOX_UID:
        problems.append(f"runs as uid {checks['uid']}")
    if int(checks["cap_eff"], 16) != 0:
        problems.append("capabilities left")
    if checks["no_new_privs"] != "1" or checks["seccomp"] != "2":
        problems.append("no seccomp filter")
    if checks["network"] == "reachable":
        problems.append("the network is reachable")
    if problems:
        facts["sandbox_note"] = "the trial sandbox is not contained: " + ", ".join(problems)
        return facts
    facts["sandbox_ok"] = True
    facts["sandbox_note"] = f"{trial.sandbox}; no network, {checks['processes_visible']} processes visible"
    return facts


def runner_facts(python: str = sys.executable, disk_path: str | None = None) -> dict:
    """A JSON-safe dict: the machine probe, `sandbox_facts`, `disk_path`, `disk_free_bytes`,
    `tlparse` (its path or None). `namespaces_ok`/`namespaces_note` (network isolation) now mean the
    bubblewrap sandbox works; `unshare` is still reported for the unsafe mode."""
    sandbox_info = sandbox_facts(python)
    # the probe runs our own script: without a working sandbox, run it unsandboxed rather than not at all
    facts = dict(probe_machine(python, unsafe_no_sandbox=not sandbox_info["sandbox_ok"]))
    facts.update(sandbox_info)
    facts["namespaces_ok"], facts["namespaces_note"] = sandbox_info["sandbox_ok"], sandbox_info["sandbox_note"]
    facts["unshare"] = shutil.which("unshare")
    path = disk_path or tempfile.gettempdir()
    facts["disk_path"] = path
    try:
        facts["disk_free_bytes"] = shutil.disk_usage(path).free
    except OSError as exc:
        facts["disk_free_bytes"] = None
        facts["disk_error"] = exc.strerror
    facts["tlparse"] = shutil.which("tlparse") or _beside_python("tlparse", python)
    return facts


def _beside_python(name: str, python: str) -> str | None:
    """Console scripts of a venv live next to its python, which need not be on PATH."""
    candidate = Path(python).parent / name
    return str(candidate) if candidate.is_file() else None
