"""Where the tests' shared data lives, so a test module can move between packages without its paths."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
CORPUS = TESTS / "corpus"
REPROS = TESTS / "repros"
FIXTURES = TESTS / "bot" / "fixtures"
GOLDEN = TESTS / "bot" / "golden"
EXAMPLES = ROOT / "examples"
RULES = ROOT / "bot" / "rules"
