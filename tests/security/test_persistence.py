"""Leaving something behind for later: a .pth in the interpreter, a package where later code runs
from, files in /tmp or the output directory, a poisoned warm worker."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from runners.sandbox import RunSpec

PLANT = """
import json, os, site, sys, sysconfig
out = {}
targets = {
    'site-packages .pth': os.path.join(sysconfig.get_paths()['purelib'], 'zz_pt2_evil.pth'),
    'prefix': os.path.join(sys.prefix, 'pt2_evil.py'),
    'base prefix stdlib': os.path.join(sysconfig.get_paths()['stdlib'], 'pt2_evil.py'),
    'runner files': '/.pt2/_bootstrap.py',
    'usr': '/usr/lib/pt2_evil.py',
    'etc': '/etc/profile.d/pt2_evil.sh',
    'out dir': %(out)r + '/report.json',
    'user site': os.path.join(site.getusersitepackages(), 'pt2_evil.pth'),
    'tmp': '/tmp/pt2_evil.py',
    'shm': '/dev/shm/pt2_evil',
    'workdir': 'pt2_evil.py',
}
for label, path in targets.items():
    try:
        if label == 'user site':
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write('import os; os.system("touch /tmp/pwned")\\n')
        out[label] = 'written'
    except OSError as exc:
        out[label] = exc.strerror
try:
    os.symlink('/etc/passwd', %(out)r + '/comment.md')
    out['out dir symlink'] = 'planted'
except OSError as exc:
    out['out dir symlink'] = exc.strerror
print(json.dumps(out))
"""

CHECK = """
import json, os, sys
found = {}
try:
    import pt2_evil
    found['import'] = pt2_evil.__file__
except ImportError:
    pass
for path in ('/tmp/pt2_evil.py', '/tmp/pwned', '/dev/shm/pt2_evil', 'pt2_evil.py', os.path.expanduser('~/.local')):
    if os.path.exists(path):
        found[path] = 'exists'
print(json.dumps(found))
"""


def test_nothing_planted_outlives_the_run(runner, tmp_path):
    out_dir = tmp_path / "triage-out"
    out_dir.mkdir()
    site_packages = Path(sysconfig.get_paths()["purelib"])
    before = set(os.listdir(site_packages))
    planted = runner(RunSpec(script=PLANT % {"out": str(out_dir)}))
    assert planted.status == "ok", planted.stderr
    out = json.loads(planted.stdout)
    # what the run may write (its own /tmp, /dev/shm, HOME and workdir) dies with it; nothing else is writable
    assert {k for k, v in out.items() if v == "written"} == {"user site", "tmp", "shm", "workdir"}, out
    assert out["out dir symlink"] == "No such file or directory"  # the out dir is not even visible
    assert list(out_dir.iterdir()) == []
    assert set(os.listdir(site_packages)) == before
    assert not Path("/tmp/pwned").exists()
    later = runner(RunSpec(script=CHECK))
    assert json.loads(later.stdout) == {}, later.stdout


def test_a_warm_workers_next_run_starts_clean(warm_worker):
    """The old fork-server kept an unmount, a daemon and files in /tmp from one run to the next."""
    poison = ("import ctypes, os, subprocess, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print('umount', libc.umount2(b'/proc', 2), ctypes.get_errno())\n"
              "open('/tmp/poison', 'w').write('x'); open('/dev/shm/poison', 'w').write('x')\n"
              "if os.fork() == 0:\n    os.setsid()\n"
              "    subprocess.Popen(['sleep', '985'], start_new_session=True)\n    os._exit(0)\n"
              "time.sleep(0.2)\nprint('mounts', len(open('/proc/self/mountinfo').read().splitlines()))\n")
    probe = ("import os\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
             "print([p for p in ('/tmp/poison', '/dev/shm/poison') if os.path.exists(p)])\n"
             "print('mounts', len(open('/proc/self/mountinfo').read().splitlines()))\n")
    baseline = warm_worker.run(RunSpec(script=probe))
    first = warm_worker.run(RunSpec(script=poison))
    second = warm_worker.run(RunSpec(script=probe))
    assert first.warm and second.warm
    assert first.stdout.splitlines()[0] == "umount -1 1"
    assert second.stdout == baseline.stdout  # same processes (just the run), no files, the same mounts
    assert second.stdout.splitlines()[:2] == ["['1', '2']", "[]"]
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 985" not in listing


def test_cold_runs_share_nothing_either(tmp_path):
    from runners.sandbox import run
    run(RunSpec(script="open('/tmp/poison', 'w').write('x')\nopen('/dev/shm/poison', 'w').write('x')"))
    second = run(RunSpec(script="import os\nprint([p for p in ('/tmp/poison', '/dev/shm/poison') if os.path.exists(p)])"))
    assert second.stdout == "[]\n"
    assert not Path("/tmp/poison").exists() and not Path("/dev/shm/poison").exists()


def test_the_interpreter_is_untouched():
    """Belt and braces after the runs above: the interpreter imports no file a run planted."""
    probe = subprocess.run([sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('pt2_evil'))"],
                           capture_output=True, text=True, cwd="/")
    assert probe.stdout.strip() == "None"
