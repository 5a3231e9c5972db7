"""Comment commands: parse `@pt2-triage <command> [argument]` and decide who may run it (pure).

The table of commands is data (`bot/rules/commands.yaml`, read by bot/core/commands_table.py).
Parsing is tolerant the way people write: any case, punctuation after the mention, words around
the command ("@pt2-triage please run this on gpu"). It is strict where it matters: quoted lines and code blocks are not commands (so
quoting one does not run it twice), and only the first command of a comment counts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bot.app.repo_config import RepoConfig
from bot.core.commands_table import CommandSpec, default_commands
from bot.core.markdown import code_span

DEVICE_WORDS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}
FILLER_WORDS = {"please", "pls", "the", "this", "on", "a", "again", "to", "with", "it", "can", "you", "now"}
PATH_RE = re.compile(r"^[A-Za-z0-9_./-]+\.py$")
FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")  # any indent: a fence in a list item is still code
CLOSING_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})\s*$")  # no info string: "```python" opens, never closes
INDENTED_CODE_RE = re.compile(r"^(?: {4}|\t)")  # an indented code block (or text nested that deep)
HTML_COMMENT_RE = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)  # hidden on GitHub, so never a request


@dataclass(frozen=True)
class Command:
    name: str
    argument: str | None  # the device, category id or path; None when the command takes none
    spec: CommandSpec


@dataclass(frozen=True)
class Rejection:
    """A command that was meant but cannot run as written; `message` says how to write it."""

    word: str
    message: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def command_lines(body: str) -> list[str]:
    """The comment's lines that may carry a command: what GitHub shows as text, so not quoted, not
    inside a fenced or indented code block, not inside an HTML comment (which GitHub hides)."""
    lines, fence = [], None
    for line in HTML_COMMENT_RE.sub(" ", body.replace("\r\n", "\n")).split("\n"):
        if fence:
            closer = CLOSING_FENCE_RE.match(line)
            if closer and closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence):
                fence = None
            continue
        opener = FENCE_RE.match(line)
        if opener:
            fence = opener.group(1)
            continue
        if line.lstrip().startswith(">") or INDENTED_CODE_RE.match(line):
            continue
        lines.append(re.sub(r"`[^`]*`", " ", line))  # inline code is an example, not a request
    return lines


def parse_command(body: str, bot_name: str, table: dict[str, CommandSpec] | None = None,
                  categories: frozenset[str] | set[str] = frozenset()) -> Command | Rejection | None:
    """The first command addressed to `@bot_name` in a comment, a Rejection explaining how to fix
    it, or None when the comment addresses no command to the bot."""
    table = table if table is not None else default_commands()
    # ASCII case folding only: GitHub does not take "@pt2-trıage" (a dotless i) as a mention of us
    mention = re.compile(rf"(?<![\w@/-])@{re.escape(bot_name)}(?![\w-])[\s:,]*(.*)", re.IGNORECASE | re.ASCII)
    for line in command_lines(body):
        match = mention.search(line)
        if not match:
            continue
        words = [w.strip("()\"'").rstrip(".,;:!?") for w in match.group(1).split()]  # keeps a leading ./
        words = [w for w in words if w]
        while words and words[0].lower() in FILLER_WORDS:
            words.pop(0)
        if not words:
            return Rejection("", "no command given")
        spec = table.get(words[0].lower())
        if spec is None:
            return Rejection(words[0], f"{code_span(words[0][:40])} is not a command I know")
        return _with_argument(spec, words[1:], categories)
    return None


def _with_argument(spec: CommandSpec, rest: list[str], categories) -> Command | Rejection:
    meaningful = [w for w in rest if w.lower() not in FILLER_WORDS]
    if spec.args == "none":
        return Command(spec.name, None, spec)
    if spec.args == "device":
        device = next((DEVICE_WORDS[w.lower()] for w in meaningful if w.lower() in DEVICE_WORDS), None)
        return Command(spec.name, device, spec)
    if not meaningful:
        return Rejection(spec.name, f"`{spec.name}` needs an argument: {spec.usage}")
    value = meaningful[0]
    if spec.args == "category":
        return check_category(Command(spec.name, value.lower().replace("-", "_"), spec), categories)
    while value.startswith("./"):
        value = value[2:]
    if not PATH_RE.match(value) or value.startswith("/") or ".." in value.split("/"):
        return Rejection(spec.name, f"`{spec.name}` needs a relative path to a .py test file, e.g. test/dynamo/test_repros.py")
    return Command(spec.name, value, spec)


def check_category(command: Command, categories: frozenset[str] | set[str]) -> Command | Rejection:
    """A command whose argument is a category id, checked against the known ones (any id is taken
    when none are given: the webhook intake parses without the ruleset, the job checks later)."""
    if command.spec.args != "category" or not categories or command.argument in categories:
        return command
    return Rejection(command.name, f"{code_span((command.argument or '')[:60])} is not a category; known: "
                     + ", ".join(sorted(categories)))


def authorize(command: Command, login: str, permission: str, config: RepoConfig) -> Decision:
    """Commands that spend runner time or write to the repo need write access (or the config's say-so)."""
    if not command.spec.needs_write:
        return Decision(True)
    has_write = permission in ("admin", "maintain", "write")
    if config.may_run(login, has_write):
        return Decision(True)
    return Decision(False, f"`{command.spec.name}` runs code on a triage runner or writes to the repository, "
                           f"so it needs write access to this repository (yours: {permission or 'none'})")

