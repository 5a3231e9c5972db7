"""Per-repository behaviour: `.github/pt2-triage.yml` in the watched repo, read once, validated.

Pure: YAML text in, a `RepoConfig` and a list of problems out. A bad field is reported (the App
posts the problems once, on the issue that hit them) and falls back to its default, so one typo
never silences the bot for a whole repository.

    # .github/pt2-triage.yml
    label: pt2-triage            # the label that starts a triage
    auto_suggest: comment        # issues with a PT2 error but no label: off | comment | label
                                 # (label: the App's label starts a run of a stranger's repro, no human step)
    draft_pr: true               # open the draft regression-test PR when a report arrives (commits say [skip ci])
    commands:
      allow: write               # who may run runner/write commands: write | users
      users: [alice, bob]        # with allow: users, these logins (besides write collaborators)
    runner:
      workflow: pt2-triage-runner.yml
      ref: main                  # where the workflow file is (default: the default branch)
      default_device: cpu        # when nothing says the repro needs a GPU
      gpu: true                  # false: never dispatch to GPU runners
    ci:
      watch: true                # comment on PRs whose CI fails with a PT2 error
      workflows: []              # workflow names or file names to watch (empty: all)
    test_files:                  # category -> the file its regression tests go into
      graph_break: test/dynamo/test_repros.py
"""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from bot.core.markdown import code_span, inert_line

CONFIG_PATH = ".github/pt2-triage.yml"
AUTO_SUGGEST = ("off", "comment", "label")
COMMAND_ALLOW = ("write", "users")
DEVICES = ("cpu", "gpu")
# The problems are posted as a comment: each quotes at most SHOWN_CHARS of what the file says, and
# at most MAX_PROBLEMS are listed, so no file makes a notice longer than GitHub takes (a refused
# notice would fail every job of the repository until the file is fixed).
SHOWN_CHARS = 60
MAX_PROBLEMS = 20


@dataclass(frozen=True)
class RepoConfig:
    label: str = "pt2-triage"
    auto_suggest: str = "comment"
    draft_pr: bool = True
    allow: str = "write"
    users: tuple[str, ...] = ()
    runner_workflow: str | None = None  # None: the App's default
    runner_ref: str | None = None  # None: the default branch
    default_device: str = "cpu"
    gpu: bool = True
    ci_watch: bool = True
    ci_workflows: tuple[str, ...] = ()
    test_files: dict[str, str] = field(default_factory=dict)

    def may_run(self, login: str, has_write: bool) -> bool:
        """Runner time and repository writes: write collaborators, plus listed users if so configured."""
        return has_write or (self.allow == "users" and login.lower() in {u.lower() for u in self.users})

    def watches(self, workflow_name: str, workflow_file: str) -> bool:
        return self.ci_watch and (not self.ci_workflows or workflow_name in self.ci_workflows
                                  or workflow_file in self.ci_workflows)


@dataclass(frozen=True)
class ConfigResult:
    config: RepoConfig
    problems: tuple[str, ...] = ()


def parse_repo_config(text: str | None, categories: frozenset[str] | set[str] = frozenset()) -> ConfigResult:
    """Validate the file's text (None: no file, all defaults). Unknown keys are problems too:
    a misspelt `draft-pr` should not be silently ignored."""
    if text is None or not text.strip():
        return ConfigResult(RepoConfig())
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return ConfigResult(RepoConfig(), (f"{CONFIG_PATH} is not valid YAML: {_one_line(exc)}",))
    if doc is None:
        return ConfigResult(RepoConfig())
    if not isinstance(doc, dict):
        return ConfigResult(RepoConfig(), (f"{CONFIG_PATH} must be a mapping of settings, not {type(doc).__name__}",))
    reader = _Reader(doc, categories)
    config = reader.read()
    problems = reader.problems
    if len(problems) > MAX_PROBLEMS:
        problems = problems[:MAX_PROBLEMS] + [f"and {len(problems) - MAX_PROBLEMS} more problems"]
    return ConfigResult(config, tuple(problems))


def _setting(name: object) -> str:
    """A setting's name as the file spells it, in code, bounded."""
    return code_span(str(name)[:SHOWN_CHARS])


def _shown(value: object) -> str:
    """A value from the file, as Python writes it, on one line, bounded and inert."""
    return inert_line(repr(value), SHOWN_CHARS)


class _Reader:
    SECTIONS = {"label", "auto_suggest", "draft_pr", "commands", "runner", "ci", "test_files"}

    def __init__(self, doc: dict, categories):
        self.doc, self.categories, self.problems = doc, categories, []

    def read(self) -> RepoConfig:
        self._unknown(self.doc, self.SECTIONS, "")
        defaults = RepoConfig()
        commands = self._section("commands", {"allow", "users"})
        runner = self._section("runner", {"workflow", "ref", "default_device", "gpu"})
        ci = self._section("ci", {"watch", "workflows"})
        return RepoConfig(
            label=self._string(self.doc, "label", defaults.label),
            auto_suggest=self._choice(self.doc, "auto_suggest", AUTO_SUGGEST, defaults.auto_suggest),
            draft_pr=self._bool(self.doc, "draft_pr", defaults.draft_pr),
            allow=self._choice(commands, "allow", COMMAND_ALLOW, defaults.allow, "commands."),
            users=self._strings(commands, "users", "commands."),
            runner_workflow=self._string(runner, "workflow", None, "runner."),
            runner_ref=self._string(runner, "ref", None, "runner."),
            default_device=self._choice(runner, "default_device", DEVICES, defaults.default_device, "runner."),
            gpu=self._bool(runner, "gpu", defaults.gpu, "runner."),
            ci_watch=self._bool(ci, "watch", defaults.ci_watch, "ci."),
            ci_workflows=self._strings(ci, "workflows", "ci."),
            test_files=self._test_files(),
        )

    def _section(self, name: str, keys: set[str]) -> dict:
        value = self.doc.get(name, {})
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problems.append(f"{_setting(name)} must be a mapping (with keys {', '.join(sorted(keys))})")
            return {}
        self._unknown(value, keys, f"{name}.")
        return value

    def _unknown(self, mapping: dict, known: set[str], prefix: str) -> None:
        for key in mapping:
            if key not in known:
                hint = f"; did you mean `{prefix}{str(key).replace('-', '_')}`?" if str(key).replace("-", "_") in known else ""
                self.problems.append(f"unknown setting {_setting(f'{prefix}{key}')}{hint} (known: {', '.join(sorted(known))})")

    def _string(self, mapping: dict, key: str, default, prefix: str = ""):
        value = mapping.get(key, default)
        if value is default or (isinstance(value, str) and value.strip()):
            return value.strip() if isinstance(value, str) else value
        self.problems.append(f"`{prefix}{key}` must be a non-empty string")
        return default

    def _bool(self, mapping: dict, key: str, default: bool, prefix: str = "") -> bool:
        value = mapping.get(key, default)
        if isinstance(value, bool):
            return value
        self.problems.append(f"`{prefix}{key}` must be true or false, not {_shown(value)}")
        return default

    def _choice(self, mapping: dict, key: str, choices: tuple[str, ...], default: str, prefix: str = "") -> str:
        value = mapping.get(key, default)
        if value is False and "off" in choices:  # YAML reads a bare `off` as false
            return "off"
        if isinstance(value, str) and value.lower() in choices:
            return value.lower()
        self.problems.append(f"`{prefix}{key}` must be one of {', '.join(choices)}, not {_shown(value)}")
        return default

    def _strings(self, mapping: dict, key: str, prefix: str) -> tuple[str, ...]:
        value = mapping.get(key, [])
        if value is None:
            return ()
        if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
            return tuple(v.strip() for v in value)
        self.problems.append(f"`{prefix}{key}` must be a list of names")
        return ()

    def _test_files(self) -> dict[str, str]:
        value = self.doc.get("test_files", {}) or {}
        if not isinstance(value, dict):
            self.problems.append("`test_files` must map category ids to test file paths")
            return {}
        files = {}
        for category, path in value.items():
            if self.categories and category not in self.categories:
                self.problems.append(f"{_setting(f'test_files.{category}')}: unknown category (known: {', '.join(sorted(self.categories))})")
            elif not isinstance(path, str) or not path.endswith(".py") or path.startswith("/") or ".." in path.split("/"):
                self.problems.append(f"{_setting(f'test_files.{category}')} must be a relative path to a .py file, not {_shown(path)}")
            else:
                files[category] = path
        return files


def _one_line(exc: Exception) -> str:
    return inert_line(str(exc), 300)
