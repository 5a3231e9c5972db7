"""The composite action, run step by step the way the runner runs it (tests/actions/harness.py).

Publish and ci-failure talk to a GitHub stub on loopback (the CLI runs in a subprocess); every
request it receives is checked against GitHub's OpenAPI description. Issue and repro modes run
real torch failures through the sandbox (slow).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.report import TriageReport

from tests.contract.openapi import rest_contract
from tests.fakes.github import FakeGitHub as GitHubStub

from .harness import Runner

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
REPROS = ROOT / "tests" / "repros"
TOKEN = "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB"
# The interpreter running the tests has this checkout installed (editable): no pip install per test
# (`installed_from_this_checkout` makes sure).
LOCAL = {"python": sys.executable, "install": "false"}


WEBHOOKS = ROOT / "tests" / "bot" / "fixtures" / "webhooks"  # spec-valid payloads (tests/contract checks them)
ISSUE = 12  # the issue of issues_labeled.json: a fullgraph graph break on a data-dependent branch


def issue_event() -> dict:
    return json.loads((WEBHOOKS / "issues_labeled.json").read_text())


@pytest.fixture(scope="session")
def installed_from_this_checkout(tmp_path_factory) -> None:
    """The steps run `python -I` away from the checkout, so they import the installed pt2-triage:
    it must be this checkout (an editable install), or they would test a stale copy."""
    found = subprocess.run([sys.executable, "-I", "-c", "import bot; print(bot.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path_factory.mktemp("elsewhere"), check=True).stdout.strip()
    assert Path(found).resolve().parents[1] == ROOT, (
        f"{sys.executable} -I imports pt2-triage from {found}, not this checkout: pip install -e '.[test,app,runner]'")


@pytest.fixture
def job(tmp_path, installed_from_this_checkout):
    """A job on a fresh runner: `job(event, event_name, ...)` -> a Runner for the root action."""
    workspace, temp = tmp_path / "workspace", tmp_path / "runner_temp"
    workspace.mkdir()
    temp.mkdir()

    def make(event=None, event_name="issues", action_dir=ROOT, **kwargs) -> Runner:
        return Runner(action_dir, workspace, temp, event=issue_event() if event is None else event,
                      event_name=event_name, token=TOKEN, **kwargs)
    make.workspace, make.temp = workspace, temp
    return make


def assert_real_github_calls(stub: GitHubStub) -> None:
    """Every call the CLI made is an operation of GitHub's REST description, with a body its schema
    accepts and a status GitHub declares, and carries the action's token."""
    contract = rest_contract()
    for request in stub.requests:
        if request.path.startswith("/_storage/"):  # the log storage GitHub redirects to, not the API
            continue
        assert request.template, f"{request.method} {request.path} is not a route the stub knows"
        assert contract.check(request.method, request.path, request.raw_body or None, request.status) == []
        assert request.authorization in (f"token {TOKEN}", f"Bearer {TOKEN}"), request.authorization


# --- set-up and input checks (fast) ------------------------------------------------------------
def test_an_unknown_mode_fails_with_an_annotation(job):
    run = job().run({"mode": "triage-everything", **LOCAL})
    assert run.steps[0].outcome == "failure"
    assert [a.data for a in run.annotations("error")] == [
        "mode must be issue, repro, ci-failure or publish, not 'triage-everything'"]
    assert all(step.outcome == "skipped" for step in run.steps[1:])


def test_setup_refuses_an_interpreter_without_the_package(job, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    run = job().run({"mode": "publish", "python": str(bare / "bin" / "python"), "install": "false"})
    assert run.step("setup").outcome == "failure"
    assert "pt2-triage is not importable" in run.annotations("error")[0].data


def test_repro_mode_needs_a_file(job):
    run = job().run({"mode": "repro", "repro-path": "missing.py", **LOCAL})
    assert run.step("triage").outcome == "failure"
    assert "missing.py: no such file" in run.annotations("error")[0].data
    assert run.outputs["category"] == ""


def test_issue_mode_refuses_an_issue_number_that_is_not_the_events(job):
    run = job().run({"mode": "issue", "issue-number": "99", **LOCAL})
    assert run.step("issue").outcome == "failure"
    assert f"issue-number 99 is not the event's issue #{ISSUE}" in run.annotations("error")[0].data


# --- what the workspace holds is never imported (fast) ------------------------------------------
def plant_packages(workspace: Path, marker: Path) -> None:
    """What a repro (or a checked-out repository) could leave in the working directory: a `bot`
    package that would shadow pt2-triage's, and a `yaml` module that would shadow PyYAML. Each
    notes in `marker` that it was imported, and the `bot` one passes the set-up's version check."""
    import bot

    note = f"open({str(marker)!r}, 'a').write(__name__ + ' ' + repr(__import__('sys').argv) + '\\n')\n"
    (workspace / "bot").mkdir()
    (workspace / "bot" / "__init__.py").write_text(note + f"__version__ = {bot.__version__!r}\n")
    for name in ("cli", "actions_io"):
        (workspace / "bot" / f"{name}.py").write_text(note)
    (workspace / "yaml.py").write_text(note)


@pytest.mark.parametrize("action, inputs", [
    ("root", {"mode": "publish", "draft-pr": "true"}),
    ("root", {"mode": "ci-failure", "run-id": "555"}),
    ("root", {"mode": "issue", "issue-number": "99"}),  # the issue step runs, then refuses the number
    ("root", {"mode": "repro", "repro-path": "missing.py"}),  # the triage step fails; the summary runs
    ("classify-logs", {"log-path": "test.log"}),
    ("publish", {}),
])
def test_a_package_planted_in_the_workspace_is_never_imported(job, tmp_path, action, inputs):
    marker = tmp_path / "planted-was-imported"
    plant_packages(job.workspace, marker)
    shutil.copytree(FIXTURES / "report_graph_break", job.workspace / "pt2-triage-report")
    shutil.copy(ROOT / "tests" / "bot" / "fixtures" / "inductor_cpp_compile_error.log", job.workspace / "test.log")
    with GitHubStub() as stub:
        stub.add_failed_run(555, {"test (inductor)": b"ruff: E501 line too long\nError: exit 1\n"})
        action_dir = ROOT if action == "root" else ROOT / "actions" / action
        run = job(action_dir=action_dir, api_url=stub.url, repository=stub.repo).run({**inputs, **LOCAL})
    ran = [step for step in run.steps if step.outcome != "skipped"]
    assert len(ran) >= 2, run.log()  # the set-up and at least one step that runs python
    assert not marker.exists(), marker.read_text() + run.log()


def test_triage_runs_isolated_from_a_fresh_read_only_directory(job, tmp_path):
    """The triage CLI (the step under which the repro runs) is started `python -I` from a directory
    of its own, not the workspace; here a stand-in interpreter records how, without running it."""
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(f"""#!/bin/bash
printf '%s\\t%s\\t%s\\n' "$PWD" "$(stat -c %a .)" "$*" >> {calls}
case " $* " in *" triage "*) ls -l >> {calls}.ls; exit 0 ;; esac
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    shutil.copy(REPROS / "graph_break_fullgraph.py", job.workspace / "-repro.py")
    run = job(event={}, event_name="workflow_dispatch").run(
        {"mode": "repro", "repro-path": "-repro.py", "python": str(python), "install": "false"})
    assert run.step("triage").outcome == "success", run.log()
    records = [line.split("\t") for line in calls.read_text().splitlines()]
    assert all(args.startswith("-I ") for _, _, args in records if args != "--version"), records
    [(cwd, mode, args)] = [record for record in records if " triage " in f" {record[2]} "]
    assert Path(cwd).parent == job.temp and mode == "555"
    assert args.startswith("-I -m bot.cli triage ./-repro.py --out " + str(job.workspace / "pt2-triage-report"))
    assert "-r--r--r--" in (tmp_path / "calls.ls").read_text()  # the input's read-only copy, alone
    assert not Path(cwd).exists()  # removed when the step ended


# --- publish (fast, GitHub stub) ---------------------------------------------------------------
def publish(job, stub: GitHubStub, **inputs):
    shutil.copytree(FIXTURES / "report_graph_break", job.workspace / "pt2-triage-report", dirs_exist_ok=True)
    return job(api_url=stub.url, repository=stub.repo).run({"mode": "publish", "draft-pr": "true", **LOCAL, **inputs})


def test_publish_comments_labels_and_opens_a_draft_pr(job):
    with GitHubStub() as stub:
        run = publish(job, stub)
    assert not run.failed, run.log()
    comments = stub.state.comments[ISSUE]  # the event's issue, not report.json's issue_number (123)
    assert len(comments) == 1 and "Graph break" in comments[0]["body"]
    assert run.outputs["comment-url"] == f"https://github.com/{stub.repo}/issues/{ISSUE}#issuecomment-{comments[0]['id']}"
    assert stub.state.labels[ISSUE]
    [pull] = stub.state.pulls
    assert pull["draft"] is True and run.outputs["pr-url"].endswith(f"/pull/{pull['number']}")
    assert any(path.startswith("test/") for _, path in stub.state.files)
    assert "## PT2 triage: published" in run.summary
    assert_real_github_calls(stub)


def test_publishing_twice_updates_the_one_comment_and_pr(job):
    with GitHubStub() as stub:
        first = publish(job, stub)
        second = publish(job, stub)
    assert not second.failed, second.log()
    assert len(stub.state.comments[ISSUE]) == 1 and len(stub.state.pulls) == 1
    assert first.outputs["comment-url"] == second.outputs["comment-url"]
    assert_real_github_calls(stub)


def test_publish_without_a_token_says_so(job):
    with GitHubStub() as stub:
        run = publish(job, stub, **{"github-token": ""})
    assert run.step("publish").outcome == "failure"
    assert "github-token is empty" in run.annotations("error")[0].data
    assert stub.requests == []


def test_a_tampered_report_cannot_choose_where_to_publish(job):
    """The report comes from the untrusted job; its issue_number is never where the comment goes."""
    with GitHubStub() as stub:
        target = job.workspace / "pt2-triage-report"
        shutil.copytree(FIXTURES / "report_graph_break", target)
        data = json.loads((target / "report.json").read_text())
        data["issue_number"] = 1
        (target / "report.json").write_text(json.dumps(data))
        run = job(api_url=stub.url, repository=stub.repo).run({"mode": "publish", **LOCAL})
    assert not run.failed, run.log()
    assert set(stub.state.comments) == {ISSUE}


# --- ci-failure and classify-logs (fast, GitHub stub) ------------------------------------------
def test_ci_failure_classifies_failed_jobs_and_comments_on_the_pr(job):
    log = (ROOT / "tests" / "bot" / "fixtures" / "inductor_cpp_compile_error.log").read_bytes()
    with GitHubStub() as stub:
        stub.add_failed_run(555, {"test (inductor, 1, 2)": log, "lint": b"ruff: E501 line too long\nError: exit 1\n"})
        event = {"action": "completed", "workflow_run": {"id": 555}}
        run = job(event, "workflow_run", api_url=stub.url, repository=stub.repo).run(
            {"mode": "ci-failure", **LOCAL})
    assert not run.failed, run.log()
    assert run.outputs["category"] == "backend_compiler_failed"
    assert float(run.outputs["confidence"]) > 0.5
    [comment] = stub.state.comments[7]
    assert run.outputs["comment-url"].endswith(f"#issuecomment-{comment['id']}")
    [error] = run.annotations("error")
    assert error.properties["title"].startswith("PT2 triage: test (inductor, 1, 2)")
    assert "test (inductor, 1, 2)" in run.summary and "lint" not in run.summary
    assert (job.workspace / "pt2-triage-report" / "ci_report.json").is_file()
    assert_real_github_calls(stub)


def test_classify_logs_points_the_annotation_at_the_log_line(job):
    shutil.copy(ROOT / "tests" / "bot" / "fixtures" / "inductor_cpp_compile_error.log", job.workspace / "test.log")
    run = job(action_dir=ROOT / "actions" / "classify-logs").run({"log-path": "test.log", **LOCAL})
    assert not run.failed, run.log()
    assert run.outputs["category"] == "backend_compiler_failed"
    [error] = run.annotations("error")
    assert error.properties["file"] == "test.log" and int(error.properties["line"]) > 1
    assert "CppCompileError" in error.data
    assert "## PT2 triage: Backend (Inductor) compile failure" in run.summary


# --- issue and repro modes on real torch (slow) ------------------------------------------------
QUICK_TRIAGE = {**LOCAL, "minimize-budget": "20", "device": "cpu", "timeout-minutes": "15"}


@pytest.mark.slow
def test_issue_mode_triages_the_labeled_issue(job):
    run = job().run({"mode": "issue", **QUICK_TRIAGE})
    assert not run.failed, run.log()
    assert run.outputs["category"] == "graph_break"
    assert run.outputs["reproduced"] == "true"
    report = TriageReport.from_dict(json.loads(Path(run.outputs["report-path"]).read_text()))
    assert report.issue_number == ISSUE and report.reproduction.reproduced
    uploaded = run.uploads["pt2-triage-report"]
    assert {"report.json", "comment.md", "issue.md", "repro_min.py"} <= {p.name for p in uploaded.iterdir()}
    # a data-dependent branch under fullgraph=True is a documented limitation: torch.cond, no regression test
    assert report.disposition.kind == "limitation" and report.workaround.verified
    assert "test_regression.py" not in {p.name for p in uploaded.iterdir()}
    assert "## PT2 triage: Graph break" in run.summary and f"Issue #{ISSUE}" in run.summary
    [error] = run.annotations("error")
    assert "Data-dependent branching" in error.data and "file" not in error.properties
    assert run.step("triage").stdout.count("::stop-commands::") == 1


@pytest.mark.slow
def test_repro_mode_annotates_the_failing_line(job):
    shutil.copy(REPROS / "graph_break_fullgraph.py", job.workspace / "repro.py")
    run = job(event={}, event_name="workflow_dispatch").run({"mode": "repro", "repro-path": "repro.py", **QUICK_TRIAGE})
    assert not run.failed, run.log()
    assert run.outputs["category"] == "graph_break"
    [error] = run.annotations("error")
    source = (REPROS / "graph_break_fullgraph.py").read_text().splitlines()
    assert error.properties["file"] == "repro.py"
    assert source[int(error.properties["line"]) - 1].strip() == "if x.sum() > 0:"


HOSTILE = '''
import glob, os, pathlib
found = [k for k in os.environ if any(w in k.upper() for w in ("TOKEN", "GITHUB", "INPUT", "RUNNER", "ACTIONS"))]
print("env names:", found)
for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY"):
    if os.environ.get(name):
        open(os.environ[name], "a").write("category=pwned-by-env\\n")
# Worst case: the attacker knows where the runner keeps its file-command files.
for path in glob.glob("{commands_dir}/*"):
    with open(path, "a") as handle:
        handle.write("category=pwned\\nreproduced=pwned\\nPT2_PWNED=1\\n/tmp/pwned-bin\\n")
# Leave a `bot` package where the next step's python would look if it ran from the workspace.
try:
    os.makedirs("{workspace}/bot", exist_ok=True)
    with open("{workspace}/bot/__init__.py", "w") as planted:
        planted.write("open({marker!r}, 'a').write('imported by ' + repr(__import__('sys').argv))\\n")
    print("planted bot/ in the workspace")
except OSError as exc:
    print("could not plant bot/ in the workspace:", exc)
leaked = []
for environ in glob.glob("/proc/*/environ"):
    try:
        if "{token_reversed}"[::-1].encode() in pathlib.Path(environ).read_bytes():
            leaked.append(environ)
    except OSError:
        pass
print("token readable in:", leaked or "nowhere")
print("::error::pwned by a workflow command")
print("::add-mask::x")
raise RuntimeError("the hostile repro ran")
'''


@pytest.mark.slow
def test_a_hostile_repro_cannot_reach_the_token_or_the_runners_files(job):
    commands_dir = job.temp / "_runner_file_commands"
    # The token reversed: the script must not carry it, or report.json (which keeps the repro) would.
    marker = job.temp / "planted-bot-was-imported"
    script = (HOSTILE.replace("{commands_dir}", str(commands_dir)).replace("{token_reversed}", TOKEN[::-1])
              .replace("{workspace}", str(job.workspace)).replace("{marker!r}", repr(str(marker))))
    (job.workspace / "evil.py").write_text("import torch\n" + script)
    # As if the workflow had put a token in the job's environment, too.
    runner = job(event={}, event_name="workflow_dispatch", job_env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": TOKEN})
    run = runner.run({"mode": "repro", "repro-path": "evil.py", **QUICK_TRIAGE, "github-token": TOKEN})
    report_dir = job.workspace / "pt2-triage-report"
    report = TriageReport.from_dict(json.loads((report_dir / "report.json").read_text()))
    output = "\n".join(r.output_tail for r in report.reproduction.runs)
    assert "the hostile repro ran" in output  # it did run, in the sandbox
    assert "env names: []" in output
    assert "token readable in: nowhere" in output
    assert report.reproduction.runs[0].network_isolated
    assert not any("pwned" in value for value in run.outputs.values())
    assert run.outputs["category"] == report.classification.category
    assert "PT2_PWNED" not in run.env_file_values and "PATH" not in run.env_file_values
    assert not any("pwned" in a.data for a in run.annotations())
    for path in report_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert all(TOKEN not in step.stdout + step.stderr for step in run.steps)
    # whatever it planted as a `bot` package (where the sandbox let its writes through) was not
    # imported by the summary step that ran after it
    assert run.step("report").outcome == "success" and not marker.exists(), marker.read_text()
