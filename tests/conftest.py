"""Shared fixtures: the bundled rules and registry are loaded once per session (they're pure data)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.classify import Classifier
from bot.core.graph_breaks import load_registry
from bot.core.ruleset import load_ruleset

TESTS = Path(__file__).parent
FIXTURES = TESTS / "bot" / "fixtures"
CORPUS = TESTS / "corpus"


@pytest.fixture(scope="session")
def ruleset():
    return load_ruleset()


@pytest.fixture(scope="session")
def registry():
    return load_registry()


@pytest.fixture(scope="session")
def classifier(ruleset, registry):
    return Classifier(ruleset, registry)


@pytest.fixture
def fixture_bytes():
    def read(name: str) -> bytes:
        return (FIXTURES / name).read_bytes()
    return read
