"""Every action and workflow we ship passes actionlint, GitHub's JSON schemas and shellcheck.

The linters come from the `test` extra (pip wheels with the binaries inside); check-jsonschema's
`vendor.*` schemas are vendored in the package, so nothing here touches the network.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = sorted([ROOT / "action.yml", *(ROOT / "actions").glob("*/action.yml")])
WORKFLOWS = sorted([*(ROOT / ".github" / "workflows").glob("*.yml"), *(ROOT / "examples" / "workflows").glob("*.yml")])
SCRIPTS = sorted((ROOT / "actions" / "scripts").glob("*.sh"))


def tool(name: str) -> str:
    """The linter installed next to this interpreter (the venv), else on PATH; missing is a set-up error."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: `pip install -e '.[test]'` (scripts/setup.sh does it)"
    return found


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_there_is_something_to_lint():
    names = {p.relative_to(ROOT).as_posix() for p in ACTIONS + WORKFLOWS}
    assert {"action.yml", "actions/reproduce/action.yml", "actions/publish/action.yml",
            "actions/classify-logs/action.yml", ".github/workflows/ci.yml",
            ".github/workflows/pt2-triage-runner.yml"} <= names
    assert len([p for p in WORKFLOWS if "examples" in p.parts]) >= 3


def test_actionlint_passes_on_every_workflow():
    done = run(tool("actionlint"), "-config-file", ".github/actionlint.yaml", "-no-color",
               *(str(p.relative_to(ROOT)) for p in WORKFLOWS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The linter really looks: an unknown input of our own action and a bad expression fail."""
    broken = tmp_path / "broken.yml"
    broken.write_text(yaml.safe_dump({
        "on": "push",
        "jobs": {"t": {"runs-on": "ubuntu-latest", "steps": [
            {"uses": "./", "with": {"modee": "issue"}},
            {"run": "echo ${{ github.event.issue.title }}"}]}}}))
    target = ROOT / ".github" / "workflows" / f"zz-broken-{tmp_path.name}.yml"
    shutil.copy(broken, target)
    try:
        done = run(tool("actionlint"), "-config-file", ".github/actionlint.yaml", "-no-color",
                   str(target.relative_to(ROOT)))
    finally:
        target.unlink()
    assert done.returncode == 1
    assert "modee" in done.stdout  # input not declared by action.yml
    assert "github.event.issue.title" in done.stdout  # untrusted text in a run: script


@pytest.mark.parametrize("schema, files", [("vendor.github-workflows", WORKFLOWS), ("vendor.github-actions", ACTIONS)],
                         ids=["workflows", "actions"])
def test_github_schemas_accept_every_file(schema, files):
    done = run(tool("check-jsonschema"), "--builtin-schema", schema, *(str(p) for p in files))
    assert done.returncode == 0, done.stdout + done.stderr


def test_github_actions_schema_rejects_a_bad_action(tmp_path):
    bad = tmp_path / "action.yml"
    bad.write_text(yaml.safe_dump({"name": "x", "description": "y", "runs": {"using": "composite",
                                                                          "steps": [{"run": "true"}]}}))
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(bad))
    assert done.returncode == 1  # a composite `run` step needs `shell`


def test_shellcheck_passes_on_the_action_scripts():
    done = run(tool("shellcheck"), "--severity=style", *(str(p) for p in SCRIPTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_composite_steps_never_interpolate_inputs_into_scripts():
    """`${{ inputs.x }}` inside `run:` is a script injection; inputs reach scripts through `env:`.
    Only `github.action_path` (ours, not user-controlled) may appear in a `run:`."""
    for path in ACTIONS:
        for step in yaml.safe_load(path.read_text())["runs"]["steps"]:
            script = step.get("run", "")
            expressions = [e for e in script.split("${{")[1:]]
            assert all(e.strip().startswith("github.action_path") for e in expressions), (path, script)


def test_only_the_token_steps_see_the_token():
    """github-token reaches exactly the steps that call GitHub (ci-failure, publish), as GITHUB_TOKEN."""
    for path in ACTIONS:
        for step in yaml.safe_load(path.read_text())["runs"]["steps"]:
            env = step.get("env") or {}
            mentions = [k for k, v in env.items() if "github-token" in str(v)]
            if mentions:
                assert mentions == ["GITHUB_TOKEN"] and step["id"] in ("ci", "publish", "run"), (path, step["name"])
            assert "github-token" not in step.get("run", "")
