"""Regenerate tests/fakes/github_shapes.json: for each operation the fake GitHub answers, and each
status GitHub declares for it, a minimal instance of the response schema (its required fields,
recursively; a list holds one item), which the fake lays its own answers over.

    .venv/bin/python -m tests.contract.build_fake_shapes

tests/contract/test_contract.py fails when the file is stale (a route added to the fake, or the
pinned description upgraded) and names this command.
"""
from __future__ import annotations

import json

from tests.fakes.github import OPERATIONS, SHAPES

from .build_webhook_fixtures import sample
from .openapi import rest_description


def build() -> dict:
    description = rest_description()
    built = {}
    for method, template in OPERATIONS:
        for status, response in description["paths"][template][method.lower()]["responses"].items():
            if "$ref" in response:
                response = description["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            if schema is not None:
                built[f"{method} {template} {status}"] = sample(description, schema, items=True)
    return built


def text(shapes: dict) -> str:
    return json.dumps(shapes, indent=1, sort_keys=True) + "\n"


def main() -> None:
    SHAPES.write_text(text(build()), encoding="utf-8")
    print(f"wrote {SHAPES}")


if __name__ == "__main__":
    main()
