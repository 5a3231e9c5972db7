"""The App's settings: read once from the environment (or a YAML file of the same keys), validated.

Every knob has one name, used in the environment, in `PT2_TRIAGE_CONFIG` files and in the README:
a deployment is configured by exactly the variables listed in `ENV_VARS`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_RUNNER_WORKFLOW = "pt2-triage-runner.yml"

# setting name -> (environment variable, what it holds)
ENV_VARS = {
    "app_id": ("PT2_TRIAGE_APP_ID", "the GitHub App's numeric id"),
    "private_key_path": ("PT2_TRIAGE_PRIVATE_KEY", "path to the App's PEM private key"),
    "webhook_secret": ("PT2_TRIAGE_WEBHOOK_SECRET", "the webhook secret set on the App"),
    "db_path": ("PT2_TRIAGE_DB", "SQLite database path (default: pt2-triage.sqlite3)"),
    "api_url": ("PT2_TRIAGE_GITHUB_API", f"REST API base URL (default {DEFAULT_API_URL}; GHES: https://HOST/api/v3)"),
    "bot_name": ("PT2_TRIAGE_BOT_NAME", "the @name commands are addressed to (default pt2-triage)"),
    "app_slug": ("PT2_TRIAGE_APP_SLUG", "the App's slug: its comments are written by <slug>[bot] (default: the bot name)"),
    "runner_workflow": ("PT2_TRIAGE_RUNNER_WORKFLOW", f"workflow file the App dispatches (default {DEFAULT_RUNNER_WORKFLOW})"),
    "workers": ("PT2_TRIAGE_WORKERS", "job worker threads in the web process (default 2; 0 with a separate `pt2-triage worker`)"),
}


class SettingsError(Exception):
    """A setting is missing or malformed; the message names the variable and how to fix it."""


@dataclass(frozen=True)
class Settings:
    webhook_secret: str
    app_id: str | None = None
    private_key_path: str | None = None
    db_path: str = "pt2-triage.sqlite3"
    api_url: str = DEFAULT_API_URL
    bot_name: str = "pt2-triage"
    app_slug: str | None = None
    runner_workflow: str = DEFAULT_RUNNER_WORKFLOW
    workers: int = 2

    @property
    def bot_login(self) -> str:
        """The account the App's comments are written by, `<app-slug>[bot]`: only its comments that
        start with a marker are the App's own (another bot's, or a person's, never are)."""
        return f"{self.app_slug or self.bot_name}[bot]"

    @property
    def private_key(self) -> str:
        """The PEM text, read when first needed (so a settings object can be made without the file)."""
        if not self.private_key_path:
            raise SettingsError(f"{ENV_VARS['private_key_path'][0]} is not set: give the path of the App's private key")
        try:
            return Path(self.private_key_path).read_text(encoding="ascii")
        except OSError as exc:
            raise SettingsError(f"{ENV_VARS['private_key_path'][0]}={self.private_key_path}: {exc.strerror}") from None


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from `PT2_TRIAGE_*` variables; `PT2_TRIAGE_CONFIG` names a YAML file with the same keys.

    Variables win over the file, so a secret can stay out of the file.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    if config_path := environ.get("PT2_TRIAGE_CONFIG"):
        values.update(_read_config_file(config_path))
    for name, (variable, _) in ENV_VARS.items():
        if environ.get(variable):
            values[name] = environ[variable]
    return _validated(values)


def _read_config_file(path: str) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SettingsError(f"PT2_TRIAGE_CONFIG={path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"PT2_TRIAGE_CONFIG={path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise SettingsError(f"PT2_TRIAGE_CONFIG={path}: expected a mapping of setting names to values")
    unknown = sorted(set(data) - set(ENV_VARS))
    if unknown:
        raise SettingsError(f"PT2_TRIAGE_CONFIG={path}: unknown settings {', '.join(unknown)} "
                            f"(known: {', '.join(ENV_VARS)})")
    return {key: str(value) for key, value in data.items() if value is not None}


def _validated(values: dict) -> Settings:
    if not values.get("webhook_secret"):
        raise SettingsError("PT2_TRIAGE_WEBHOOK_SECRET is not set: it must equal the webhook secret configured on the App")
    if bool(values.get("app_id")) != bool(values.get("private_key_path")):
        raise SettingsError("set both PT2_TRIAGE_APP_ID and PT2_TRIAGE_PRIVATE_KEY (the App authenticates with both)")
    if "workers" in values:
        try:
            values["workers"] = int(values["workers"])
        except ValueError:
            raise SettingsError(f"PT2_TRIAGE_WORKERS={values['workers']}: expected a whole number") from None
        if values["workers"] < 0:
            raise SettingsError("PT2_TRIAGE_WORKERS must be 0 (jobs run in `pt2-triage worker`) or more")
    if "api_url" in values:
        values["api_url"] = str(values["api_url"]).rstrip("/")
        if not str(values["api_url"]).startswith(("http://", "https://")):
            raise SettingsError(f"PT2_TRIAGE_GITHUB_API={values['api_url']}: expected an http(s) URL")
    return Settings(**values)
