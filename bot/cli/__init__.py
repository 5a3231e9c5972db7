"""The `pt2-triage` commands, one module per group (main.py wires them)."""
from bot.cli.main import main

__all__ = ["main"]
