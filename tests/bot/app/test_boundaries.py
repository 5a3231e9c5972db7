"""The App is the trusted side: it never loads the execution engine (runners/) nor torch."""
from __future__ import annotations

import subprocess
import sys


def test_importing_the_app_loads_no_runner_module_and_no_torch():
    code = ("import sys, bot.app.factory, bot.app.features, bot.app.jobs, bot.app.publish, bot.app.intake\n"
            "bot.app.features.features()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('runners', 'torch')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_no_module_under_bot_app_imports_runners():
    from pathlib import Path

    app = Path(__file__).resolve().parents[3] / "bot" / "app"
    offenders = [str(p) for p in app.rglob("*.py") if "runners" in p.read_text() and "import" in p.read_text()
                 and any(line.lstrip().startswith(("from runners", "import runners")) for line in p.read_text().splitlines())]
    assert offenders == []
