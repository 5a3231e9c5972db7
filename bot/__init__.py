"""pt2-triage: triage PyTorch 2 compiler failures."""
__version__ = "0.1.0"
