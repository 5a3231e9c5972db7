"""Run a composite action's steps locally, the way the GitHub Actions runner does.

What is reproduced (from the runner's behaviour, actions/runner):
- inputs: defaults (expressions allowed), unknown inputs rejected, values as strings; composite
  actions get no `INPUT_*` variables, only the `inputs` context (runner issue #665);
- `${{ }}` in `env:`, `with:`, `run:` and the action's `outputs:`, and bare `if:` expressions,
  evaluated over the `github`, `inputs`, `steps`, `runner` and `env` contexts with GitHub's
  semantics (`&&`/`||` return operands, case-insensitive string `==`, `null` reads as '');
- `shell: bash` runs `bash --noprofile --norc -eo pipefail FILE` with the job's environment, the
  step's `env:`, and per-step file-command files `$GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH`,
  `$GITHUB_STEP_SUMMARY` under `$RUNNER_TEMP/_runner_file_commands/`, read after the step ends;
- workflow commands on stdout (`::error file=..,line=..::`, `::group::`, `::stop-commands::`),
  with the runner's unescaping;
- `uses:` steps are delegated to handlers given by the test (e.g. upload-artifact copies files).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
COMMAND = re.compile(r"^::(?P<name>[A-Za-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")
STEP_TIMEOUT_S = 1800


class ExpressionError(ValueError):
    pass


# --- expressions -------------------------------------------------------------------------------
TOKEN = re.compile(r"""\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!()\[\],.])
                       |(?P<ident>[A-Za-z_][A-Za-z0-9_-]*))""", re.X)


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ExpressionError(f"cannot parse {text!r} at {position}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value == value


def as_string(value: Any) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()
    if isinstance(left, str) != isinstance(right, str) and None not in (left, right):
        return as_string(left).lower() == as_string(right).lower()
    return left == right


class Evaluator:
    """A recursive-descent evaluator for the expression subset actions use."""

    def __init__(self, contexts: Mapping[str, Any], status: Callable[[str], bool]):
        self.contexts, self.status = contexts, status

    def evaluate(self, text: str) -> Any:
        self.tokens, self.index = tokenize(text), 0
        value = self.or_()
        if self.index != len(self.tokens):
            raise ExpressionError(f"trailing tokens in {text!r}")
        return value

    def peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.comparison()
        while self.peek() == "&&":
            self.take()
            right = self.comparison()
            value = right if truthy(value) else value
        return value

    def comparison(self) -> Any:
        value = self.unary()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.unary()
            value = equal(value, right) if op == "==" else not equal(value, right)
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, text = self.take()
        if text == "(":
            value = self.or_()
            self.take()
            return value
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text) if "." in text else int(text)
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self.peek() == "(":
            return self.call(text)
        value = self.contexts.get(text)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = self.or_()
                self.take()
            value = value.get(key) if isinstance(value, Mapping) else None
        return value

    def call(self, name: str) -> Any:
        self.take()
        args = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take()
        if name in ("success", "always", "failure", "cancelled"):
            return self.status(name)
        if name == "contains":
            haystack, needle = args
            if isinstance(haystack, list):
                return any(equal(item, needle) for item in haystack)
            return as_string(needle).lower() in as_string(haystack).lower()
        if name == "toJSON":
            return json.dumps(args[0], indent=2)
        if name == "fromJSON":
            return json.loads(args[0])
        raise ExpressionError(f"function {name}() is not supported by the harness")


def interpolate(text: str, evaluator: Evaluator) -> str:
    return EXPRESSION.sub(lambda m: as_string(evaluator.evaluate(m.group(1))), text)


def evaluate_value(text: Any, evaluator: Evaluator) -> Any:
    """A whole-value `${{ x }}` keeps its type (for `if:`); anything else is a string."""
    if not isinstance(text, str):
        return text
    whole = EXPRESSION.fullmatch(text.strip())
    return evaluator.evaluate(whole.group(1)) if whole else interpolate(text, evaluator)


# --- file commands and workflow commands -------------------------------------------------------
def parse_file_command(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIM` ... `DELIM` blocks, as the runner reads them."""
    values, lines, index = {}, text.split("\n"), 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            while index < len(lines) and lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            if index >= len(lines):
                raise ValueError(f"file command {name!r}: delimiter {delimiter!r} never closed")
            index += 1
            values[name] = "\n".join(body)
        else:
            name, _, value = line.partition("=")
            values[name] = value
    return values


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


@dataclass(frozen=True)
class WorkflowCommand:
    name: str
    properties: dict
    data: str


def workflow_commands(stdout: str) -> list[WorkflowCommand]:
    """The commands the runner would act on, honouring `::stop-commands::TOKEN` ... `::TOKEN::`."""
    found, stopped_by = [], None
    for line in stdout.splitlines():
        match = COMMAND.match(line.strip())
        if not match:
            continue
        if stopped_by is not None:
            if match["name"] == stopped_by and not match["props"]:
                stopped_by = None
            continue
        if match["name"] == "stop-commands":
            stopped_by = match["data"]
            continue
        props = {}
        for item in (match["props"] or "").split(","):
            if "=" in item:
                key, value = item.split("=", 1)
                props[key.strip()] = unescape_property(value)
        found.append(WorkflowCommand(match["name"], props, unescape_data(match["data"])))
    return found


# --- running -----------------------------------------------------------------------------------
@dataclass
class StepRecord:
    name: str
    id: str | None
    outcome: str  # success | failure | skipped
    stdout: str = ""
    stderr: str = ""
    outputs: dict = field(default_factory=dict)


@dataclass
class ActionRun:
    outputs: dict
    steps: list[StepRecord]
    commands: list[WorkflowCommand]
    summary: str
    env_file_values: dict  # what steps wrote to $GITHUB_ENV (applied to later steps)
    uploads: dict  # artifact name -> directory holding the uploaded copy

    @property
    def failed(self) -> bool:
        return any(step.outcome == "failure" for step in self.steps)

    def annotations(self, level: str | None = None) -> list[WorkflowCommand]:
        levels = (level,) if level else ("error", "warning", "notice")
        return [c for c in self.commands if c.name in levels]

    def step(self, step_id: str) -> StepRecord:
        return next(s for s in self.steps if s.id == step_id)

    def log(self) -> str:
        return "\n".join(f"--- {s.name} [{s.outcome}]\n{s.stdout}\n{s.stderr}" for s in self.steps)


def upload_artifact(with_: Mapping[str, str], workspace: Path, uploads_root: Path) -> dict:
    """`actions/upload-artifact`: copy `path` (relative to the workspace) under the artifact's name."""
    source = workspace / with_["path"]
    target = uploads_root / with_["name"]
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    elif source.exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    elif with_.get("if-no-files-found", "warn") == "error":
        raise FileNotFoundError(source)
    return {"artifact-id": str(abs(hash(with_["name"])) % 10**9)}


class Runner:
    """One job running one composite action (as `uses:` would)."""

    def __init__(self, action_dir: Path, workspace: Path, runner_temp: Path, *, event: Mapping,
                 event_name: str, job_env: Mapping[str, str] | None = None, repository: str = "octo/repo",
                 token: str = "ghs_harnessdefaulttoken000000000000000000", api_url: str = "https://api.github.com",
                 uses_handlers: Mapping[str, Callable] | None = None):
        self.action_dir, self.workspace, self.temp = action_dir, workspace, runner_temp
        self.metadata = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
        self.event, self.event_name = event, event_name
        self.job_env = dict(job_env or {})
        self.repository, self.token, self.api_url = repository, token, api_url
        self.uploads_root = runner_temp / "_uploads"
        self.uses_handlers = {"actions/upload-artifact": lambda w: upload_artifact(w, workspace, self.uploads_root),
                              **(uses_handlers or {})}
        self.event_path = runner_temp / "_github_workflow" / "event.json"
        self.event_path.parent.mkdir(parents=True, exist_ok=True)
        self.event_path.write_text(json.dumps(event), encoding="utf-8")

    def github_context(self) -> dict:
        return {"action_path": str(self.action_dir), "workspace": str(self.workspace), "event": self.event,
                "event_name": self.event_name, "repository": self.repository, "token": self.token,
                "api_url": self.api_url, "server_url": "https://github.com", "run_id": "4242", "run_attempt": "1",
                "job": "triage", "sha": "0" * 40, "ref": "refs/heads/main", "actor": "octocat"}

    def base_env(self) -> dict[str, str]:
        """What the runner puts in every step's environment (a subset: what actions read)."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.temp / "home"),
                "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
                "GITHUB_EVENT_PATH": str(self.event_path), "GITHUB_EVENT_NAME": self.event_name,
                "GITHUB_REPOSITORY": self.repository, "GITHUB_API_URL": self.api_url,
                "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242", "GITHUB_ACTION_PATH": str(self.action_dir),
                "RUNNER_TEMP": str(self.temp), "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64"}

    def resolve_inputs(self, given: Mapping[str, str], evaluator: Evaluator) -> dict[str, str]:
        declared = self.metadata.get("inputs") or {}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise ValueError(f"unexpected inputs {unknown}; the action declares {sorted(declared)}")
        resolved = {}
        for name, spec in declared.items():
            if name in given:
                resolved[name] = as_string(given[name])
            elif spec.get("required") and "default" not in spec:
                raise ValueError(f"input {name} is required")
            else:
                resolved[name] = as_string(evaluate_value(str(spec.get("default", "")), evaluator))
        return resolved

    def run(self, inputs: Mapping[str, str]) -> ActionRun:
        (self.temp / "home").mkdir(parents=True, exist_ok=True)
        steps_context: dict[str, dict] = {}
        contexts = {"github": self.github_context(), "runner": {"temp": str(self.temp), "os": "Linux"},
                    "steps": steps_context, "env": dict(self.job_env)}
        failed = {"value": False}
        status = lambda name: {"always": True, "success": not failed["value"], "failure": failed["value"],
                               "cancelled": False}[name]
        evaluator = Evaluator(contexts, status)
        contexts["inputs"] = self.resolve_inputs(inputs, evaluator)
        records, commands, summary, env_values = [], [], [], {}
        for index, step in enumerate(self.metadata["runs"]["steps"]):
            record = self.run_step(index, step, evaluator, failed["value"], env_values)
            records.append(record)
            commands.extend(workflow_commands(record.stdout))
            summary.append(record.outputs.pop("__summary__", ""))
            if record.outcome == "failure":
                failed["value"] = True
            if step.get("id"):
                steps_context[step["id"]] = {"outputs": record.outputs, "outcome": record.outcome,
                                             "conclusion": record.outcome}
        outputs = {name: as_string(evaluate_value(spec["value"], evaluator))
                   for name, spec in (self.metadata.get("outputs") or {}).items()}
        return ActionRun(outputs, records, commands, "".join(summary), env_values, self.uploads_for())

    def uploads_for(self) -> dict:
        root = self.uploads_root
        return {p.name: p for p in root.iterdir()} if root.is_dir() else {}

    def run_step(self, index: int, step: Mapping, evaluator: Evaluator, failed_before: bool,
                 env_values: dict) -> StepRecord:
        name = step.get("name") or step.get("id") or f"step {index}"
        condition = step.get("if", "success()")
        if isinstance(condition, str) and not re.search(r"\b(success|always|failure|cancelled)\(", condition):
            condition = f"success() && ({condition})"
        condition = as_string(condition)
        whole = EXPRESSION.fullmatch(condition.strip())
        if not truthy(evaluator.evaluate(whole.group(1) if whole else condition)):
            return StepRecord(name, step.get("id"), "skipped")
        evaluator.contexts["env"] = {**self.job_env, **env_values}
        env = {key: as_string(evaluate_value(str(value), evaluator)) for key, value in (step.get("env") or {}).items()}
        if "uses" in step:
            return self.run_uses(name, step, evaluator)
        return self.run_bash(name, step, interpolate(step["run"], evaluator), env, env_values)

    def run_uses(self, name: str, step: Mapping, evaluator: Evaluator) -> StepRecord:
        action = step["uses"].split("@", 1)[0]
        with_ = {key: as_string(evaluate_value(str(value), evaluator)) for key, value in (step.get("with") or {}).items()}
        handler = self.uses_handlers.get(action)
        if handler is None:
            raise KeyError(f"no handler for uses: {step['uses']}")
        return StepRecord(name, step.get("id"), "success", outputs=handler(with_))

    def run_bash(self, name: str, step: Mapping, script: str, step_env: Mapping[str, str],
                 env_values: dict) -> StepRecord:
        if step.get("shell") != "bash":
            raise ValueError(f"step {name!r}: the harness runs shell: bash only")
        commands_dir = self.temp / "_runner_file_commands"
        commands_dir.mkdir(parents=True, exist_ok=True)
        files = {kind: commands_dir / f"{kind}_{uuid.uuid4()}" for kind in ("set_output", "set_env", "add_path", "step_summary")}
        for path in files.values():
            path.touch()
        script_path = self.temp / f"{uuid.uuid4()}.sh"
        script_path.write_text(script, encoding="utf-8")
        env = {**self.base_env(), **self.job_env, **env_values, **step_env,
               "GITHUB_OUTPUT": str(files["set_output"]), "GITHUB_ENV": str(files["set_env"]),
               "GITHUB_PATH": str(files["add_path"]), "GITHUB_STEP_SUMMARY": str(files["step_summary"])}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_path)],
                              cwd=self.workspace, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
        outputs = parse_file_command(files["set_output"].read_text(encoding="utf-8"))
        env_values.update(parse_file_command(files["set_env"].read_text(encoding="utf-8")))
        added = [line for line in files["add_path"].read_text(encoding="utf-8").splitlines() if line]
        if added:
            env_values["PATH"] = ":".join([*reversed(added), env_values.get("PATH", env["PATH"])])
        outputs["__summary__"] = files["step_summary"].read_text(encoding="utf-8")
        outcome = "success" if done.returncode == 0 else "failure"
        return StepRecord(name, step.get("id"), outcome, done.stdout, done.stderr, outputs)
