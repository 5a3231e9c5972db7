"""Reading what is not the run's: host files, other jobs' repros, our environment, the host's /proc."""
from __future__ import annotations

import json
import sys
from pathlib import PurePath

from runners.sandbox import RunSpec, interpreter_dirs

from .conftest import leaked

READ_EVERYTHING = """
import glob, json, os
paths = {paths!r} + glob.glob('/tmp/pt2-sandbox-*/repro.py') + glob.glob('/root/.*') + glob.glob('/home/*/.*')
found = {{}}
for path in paths:
    try:
        with open(path, errors='replace') as f:
            found[path] = f.read(4096)
    except OSError as exc:
        found[path] = exc.strerror
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        found['environ ' + pid] = open(f'/proc/{{pid}}/environ', errors='replace').read()
    except OSError as exc:
        found['environ ' + pid] = exc.strerror
print(json.dumps({{'found': found, 'root': sorted(os.listdir('/')), 'uid': os.getuid(), 'env': dict(os.environ)}}))
"""


def test_no_host_secret_is_readable(runner, planted):
    paths = ["/etc/shadow", str(planted.home / ".ssh" / "id_rsa"), str(planted.home / ".git-credentials"),
             "/root/.git-credentials", "/root/.ssh/id_rsa", str(planted.other_job / "repro.py"),
             "/proc/1/environ", "/proc/self/environ"]
    result = runner(RunSpec(script=READ_EVERYTHING.format(paths=paths)))
    assert result.status == "ok", result.stderr
    assert leaked(result, planted) == []
    report = json.loads(result.stdout)
    assert report["uid"] == 65534 and "GITHUB_TOKEN" not in report["env"]
    assert report["found"]["/etc/shadow"] == "Permission denied"
    for path in paths[1:6]:
        assert report["found"][path] == "No such file or directory", path
    # the filesystem is an allowlist: nothing of the host's /tmp, /home, /run or /var
    assert not {"home", "run", "var", "mnt", "opt", "srv"} & set(report["root"])


def test_other_jobs_workdirs_are_invisible(runner, planted):
    script = "import glob, os\nprint(sorted(os.listdir('/tmp')), glob.glob('/tmp/pt2-*'), os.path.exists(%r))" % str(planted.other_job)
    result = runner(RunSpec(script=script))
    assert result.stdout.strip() == f"{sorted(_tmp_entries_the_run_needs())} [] False", result.stdout + result.stderr


def _tmp_entries_the_run_needs() -> set[str]:
    """Its home, and the top of any interpreter directory that lives under the host's /tmp (a CI
    clone there): that directory is bound in read-only, as it must be for the script to run."""
    under_tmp = [PurePath(d).relative_to("/tmp") for d in interpreter_dirs(sys.executable) if d.startswith("/tmp/")]
    return {"home"} | {path.parts[0] for path in under_tmp}


def test_the_token_is_in_no_process_of_the_sandbox(runner, planted):
    script = ("import os\nfor pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
              "    try:\n        print(pid, open(f'/proc/{pid}/environ', 'rb').read())\n"
              "    except OSError as exc:\n        print(pid, exc.strerror)\n"
              "print(len([p for p in os.listdir('/proc') if p.isdigit()]), 'processes')")
    result = runner(RunSpec(script=script))
    assert leaked(result, planted) == [] and "GITHUB_TOKEN" not in result.stdout
    count = int(result.stdout.split()[-2])
    assert count <= 3, result.stdout  # the launcher (PID 1), the script, maybe its reader: never the host's
