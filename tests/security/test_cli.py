"""The CLI against hostile repros and hostile output directories, as a user runs it.

The runner-level suites here show the sandbox holds; these show what the CLI makes of a repro that
tries to look failed, of a directory it is told to write into, and of a machine without bubblewrap.
No torch is needed by the attacks, so each takes a second or two.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main

FORGED = '''\
import sys
print("Traceback (most recent call last):")
print('  File "/site-packages/torch/_dynamo/convert_frame.py", line 1, in _compile')
print("torch._dynamo.exc.Unsupported: Data-dependent branching")
sys.exit(0)
'''
CLAIMS_AN_EXCEPTION = '''\
import os
# the evidence fd is the script's own: it can write a claim, but the exit status is the launcher's
for fd in range(3, 64):
    try:
        os.write(fd, b'{"type": "torch._dynamo.exc.Unsupported", "message": "forged", "frames": []}\\n')
    except OSError:
        pass
'''


def test_a_forged_traceback_with_exit_0_is_not_a_reproduction(tmp_path, capsys):
    script = tmp_path / "forged.py"
    script.write_text(FORGED)
    assert main(["reproduce", str(script), "--json", "--no-minifier"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reproduction"]["reproduced"] is False
    assert report["reproduction"]["status"] == "not_reproduced"
    assert all(run["failed"] is False for run in report["reproduction"]["runs"])


def test_a_claim_on_the_evidence_channel_does_not_make_an_exit_0_run_fail(tmp_path, capsys):
    script = tmp_path / "claims.py"
    script.write_text(CLAIMS_AN_EXCEPTION)
    assert main(["reproduce", str(script), "--json", "--no-minifier"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reproduction"]["reproduced"] is False
    assert all(run["exception"] is None for run in report["reproduction"]["runs"])


def test_minimize_refuses_a_script_without_torch_or_an_entry_point(tmp_path, capsys):
    script = tmp_path / "forged.py"
    script.write_text(FORGED.replace("sys.exit(0)", "sys.exit(1)"))
    assert main(["minimize", str(script), "--budget", "5", "--jobs", "0"]) == 2
    assert "calls no PT2 entry point (torch.compile" in capsys.readouterr().err


def test_the_output_directory_must_be_new_or_a_previous_triage_output(tmp_path, capsys):
    script = tmp_path / "ok.py"
    script.write_text("print('fine')\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["reproduce", str(script), "--out", str(foreign), "--no-minifier"]) == 2
    assert "not a triage's output" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"

    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "out-link"
    link.symlink_to(target)
    assert main(["reproduce", str(script), "--out", str(link), "--no-minifier"]) == 2
    assert "not a plain directory" in capsys.readouterr().err
    assert not any(target.iterdir())

    out = tmp_path / "out"
    assert main(["reproduce", str(script), "--out", str(out), "--no-minifier"]) == 0
    (out / "artifacts" / "stale.log").write_text("from before")
    assert main(["reproduce", str(script), "--out", str(out), "--no-minifier"]) == 0  # its own output: replaced
    assert not (out / "artifacts" / "stale.log").exists()
    assert json.loads((out / "report.json").read_text())["reproduction"]["status"] == "not_reproduced"


def cli(args: list[str], path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("with_flag", [False, True])
def test_without_bubblewrap_untrusted_code_is_refused_unless_asked(tmp_path, with_flag):
    """A PATH without bwrap: one line with the fix and exit 2; with --unsafe-no-sandbox the run goes
    ahead and the report says how weakly it was isolated."""
    script = tmp_path / "ok.py"
    script.write_text("print('fine')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("unshare", "setpriv"):  # what the unsafe mode uses, without bwrap beside them
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / tool).symlink_to(found)
    args = ["reproduce", str(script), "--json", "--no-minifier"] + (["--unsafe-no-sandbox"] if with_flag else [])
    result = cli(args, str(bin_dir))
    if not with_flag:
        assert result.returncode == 2
        assert "cannot run untrusted code here" in result.stderr and "apt-get install bubblewrap" in result.stderr
        assert "Traceback" not in result.stderr
        return
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert all(run["sandbox"].startswith("none (unsafe)") for run in report["reproduction"]["runs"])


def test_the_repro_cannot_see_the_out_dir_the_cli_writes(tmp_path, capsys):
    """The out dir lies outside the sandbox: a repro that looks for it finds nothing to plant into."""
    out = tmp_path / "triage-out"
    script = tmp_path / "looks.py"
    script.write_text(f"import os\nprint('SEEN' if os.path.exists({str(out)!r}) else 'HIDDEN')\n"
                      f"print('TMP', sorted(os.listdir('/tmp')))\n")
    assert main(["reproduce", str(script), "--out", str(out), "--json", "--no-minifier"]) == 0
    report = json.loads(capsys.readouterr().out)
    tail = report["reproduction"]["runs"][0]["output_tail"]
    assert "HIDDEN" in tail and "SEEN" not in tail
    assert Path(out / "report.json").is_file()
