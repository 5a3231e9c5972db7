"""Assemble tests/corpus/cases.jsonl from the recorded torch output and the issue texts.

- recorded/<name>.log + <name>.meta.json: real torch output, one plain run per script (see
  record.py), labeled by the script's `# category:` header, with the rule expected to decide it
  (`rule`, null when no rule does); `.diag` re-runs of older recordings are not cases;
- issues/<name>.md: issue-style texts (first line `<!-- category: <id> -->`, stripped).
One JSON object per line, sorted by id: {"id", "category", "source", "body"} and, for a recorded
case, "rule".

    python tests/corpus/build_cases.py [--check]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

CORPUS = Path(__file__).parent
HEADER_RE = re.compile(r"^<!-- category: (\w+) -->\n")


def cases() -> list[dict]:
    found = []
    for log in sorted((CORPUS / "recorded").glob("*.log")):
        if log.stem.endswith(".diag"):
            continue  # a diagnostics re-run of the same script: the same failure again, never a case
        meta = json.loads(log.with_suffix(".meta.json").read_text())
        if "rule" not in meta:
            raise SystemExit(f"{log.with_suffix('.meta.json')}: no expected `rule` (python tests/corpus/record.py --rules-only)")
        found.append({"id": f"recorded/{log.stem}", "category": meta["category"], "source": "recorded",
                      "body": log.read_text(encoding="utf-8"), "rule": meta["rule"]})
    for issue in sorted((CORPUS / "issues").glob("*.md")):
        text = issue.read_text(encoding="utf-8")
        match = HEADER_RE.match(text)
        if not match:
            raise SystemExit(f"{issue}: first line must be <!-- category: <id> -->")
        found.append({"id": f"issues/{issue.stem}", "category": match.group(1), "source": "issue",
                      "body": text[match.end():]})
    return sorted(found, key=lambda case: case["id"])


def render() -> str:
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if cases.jsonl is out of date")
    args = parser.parse_args()
    target = CORPUS / "cases.jsonl"
    text = render()
    if args.check:
        sys.exit(0 if target.exists() and target.read_text(encoding="utf-8") == text else 1)
    target.write_text(text, encoding="utf-8")
    print(f"{target}: {text.count(chr(10))} cases")


if __name__ == "__main__":
    main()
