"""The comment commands' table (`bot/rules/commands.yaml`), read and checked once.

Pure data about the commands: their names and aliases, usage, help text, what argument each takes
and whether it needs write access. The App parses comments with it (bot/app/commands.py) and every
report comment shows its help rows, so this is the one reader of the file.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

ARG_KINDS = ("none", "device", "category", "path")


class CommandTableError(Exception):
    """The command table is malformed; the message names the entry and what is wrong with it."""


@dataclass(frozen=True)
class CommandSpec:
    """One command: its name, usage and help as the help table shows them, the argument it takes
    (`ARG_KINDS`), whether it needs write access, and the other words accepted for it."""

    name: str
    usage: str
    help: str
    args: str
    needs_write: bool
    aliases: tuple[str, ...] = ()


def load_commands(path: Path | None = None) -> dict[str, CommandSpec]:
    """The command table by name and alias; a malformed table fails loudly at start-up."""
    source = path or resources.files("bot.rules") / "commands.yaml"
    return _parse_table(source.read_text(encoding="utf-8"), str(path or "bot/rules/commands.yaml"))


@lru_cache(maxsize=1)
def default_commands() -> dict[str, CommandSpec]:
    return load_commands()


def _parse_table(text: str, where: str) -> dict[str, CommandSpec]:
    doc = yaml.safe_load(text) or {}
    entries = doc.get("commands") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CommandTableError(f"{where}: expected `commands:` with a list of commands")
    table: dict[str, CommandSpec] = {}
    for index, entry in enumerate(entries):
        label = f"{where}: commands[{index}]"
        missing = {"name", "usage", "help", "args", "needs_write"} - set(entry or {})
        if missing:
            raise CommandTableError(f"{label}: missing {', '.join(sorted(missing))}")
        if entry["args"] not in ARG_KINDS:
            raise CommandTableError(f"{label}: args must be one of {', '.join(ARG_KINDS)}")
        spec = CommandSpec(str(entry["name"]).lower(), str(entry["usage"]), str(entry["help"]), entry["args"],
                           bool(entry["needs_write"]), tuple(str(a).lower() for a in entry.get("aliases", ())))
        for word in (spec.name, *spec.aliases):
            if word in table:
                raise CommandTableError(f"{label}: `{word}` is already a command or alias")
            table[word] = spec
    return table


def help_rows(table: dict[str, CommandSpec] | None = None) -> list[CommandSpec]:
    """Each command once, in table order (aliases folded)."""
    seen, rows = set(), []
    for spec in (table if table is not None else default_commands()).values():
        if spec.name not in seen:
            seen.add(spec.name)
            rows.append(spec)
    return rows


def load_command_help(path: Path | None = None) -> tuple[tuple[str, str], ...]:
    """(usage, help) for each comment command, in table order: the help rows a report comment shows."""
    table = load_commands(path) if path else default_commands()
    return tuple((spec.usage, spec.help) for spec in help_rows(table))
