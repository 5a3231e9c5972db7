"""What every command module shares: the user-fixable error, and the classifier a command reads with.

Its own module so the command groups (main, app_commands, doctor) import it and not each other.
"""
from __future__ import annotations

from bot.core.classify import Classifier
from bot.core.graph_breaks import load_registry
from bot.core.ruleset import load_ruleset


class UsageError(Exception):
    """A mistake the user can fix; printed as one line, exit status 2."""


def build_classifier(rules_dir: str | None) -> Classifier:
    return Classifier(load_ruleset(rules_dir), load_registry())
