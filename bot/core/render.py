"""Rendering records into text people read, through the Jinja2 templates in `templates/`.

Code passes values; wording and layout live in the templates.
"""
from __future__ import annotations

import shlex
from functools import lru_cache
from importlib import resources
from pathlib import Path

from bot.core.printable import printable


def templates_dir() -> str:
    """`templates/` next to this package in a source checkout (editable installs included), else the
    installed `pt2_triage_templates` package. The checkout wins so an edited template takes effect
    without reinstalling (setuptools copies mapped package dirs even for `pip install -e`)."""
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if (checkout / "comment.md.j2").is_file():
        return str(checkout)
    return str(resources.files("pt2_triage_templates"))


@lru_cache(maxsize=1)
def environment():
    """The Jinja2 environment (imported on first use: `classify --json` renders nothing)."""
    import jinja2

    root = templates_dir()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty string
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["env_prefix"] = env_prefix
    return env


def render(template_name: str, **values) -> str:
    """The template filled in; what people read (`.md`, `.txt`) with the run's control characters
    made visible (bot/core/printable.py). The templates have none of their own. A generated
    `.py` file is left as it renders: it is code, written to a file, never printed."""
    text = environment().get_template(template_name).render(**values)
    return printable(text) if template_name.endswith((".md.j2", ".txt.j2")) else text


def env_prefix(variables: dict) -> str:
    """`A=1 B='x y' ` for a shell command line."""
    return "".join(f"{name}={shlex.quote(str(value))} " for name, value in variables.items())
