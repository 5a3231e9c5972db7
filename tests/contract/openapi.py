"""GitHub's own OpenAPI descriptions, for checking our mocks and fixtures against the real API.

`specs_dir()` installs `@octokit/openapi` and `@octokit/openapi-webhooks` (pinned, through
scripts/fetch_octokit_specs.sh) into a cache directory the first time. A missing npm is an error,
not a skip: a contract test that silently does not run protects nothing.

`RestContract.check(method, url, body, status)` says what is wrong with one recorded call:
the operation must exist in api.github.com's description, the status must be one it declares,
and a JSON request body must validate against the operation's request schema.
`RestContract.check_response(...)` holds the answer to the same standard: its JSON body must
validate against the response schema GitHub declares for that status, and a `Link` header is
only for operations that paginate, pointing at pages of the same list.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = ROOT / "scripts" / "fetch_octokit_specs.sh"
# Path parameters GitHub documents as "can include slashes": a file path, a git ref, a branch.
SLASHED_PARAMETERS = {"path", "ref", "branch"}


@functools.lru_cache(maxsize=1)
def specs_dir() -> Path:
    result = subprocess.run(["bash", str(FETCH_SCRIPT)], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"could not install GitHub's OpenAPI specs: {result.stderr.strip()[-2000:]}")
    return Path(result.stdout.strip().splitlines()[-1]) / "node_modules" / "@octokit"


@functools.lru_cache(maxsize=1)
def rest_description() -> dict:
    return json.loads((specs_dir() / "openapi" / "generated" / "api.github.com.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def webhooks_description() -> dict:
    return json.loads((specs_dir() / "openapi-webhooks" / "generated" / "api.github.com.json").read_text(encoding="utf-8"))


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _validator(document: dict, uri: str, *pointer_parts: str) -> jsonschema.Draft202012Validator:
    registry = Registry().with_resource(uri, Resource.from_contents(document, default_specification=DRAFT202012))
    return jsonschema.Draft202012Validator({"$ref": uri + _pointer(*pointer_parts)}, registry=registry)


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    regex: re.Pattern

    @property
    def literal_chars(self) -> int:
        return len(re.sub(r"\{[^}]+\}", "", self.template))


class RestContract:
    URI = "urn:github:rest"

    def __init__(self, description: dict | None = None):
        self.description = description or rest_description()
        self.operations = sorted(
            (Operation(method.upper(), template, self._compile(template))
             for template, item in self.description["paths"].items()
             for method in item if method in ("get", "post", "put", "patch", "delete")),
            key=lambda op: -op.literal_chars)  # /issues/comments/{id} before /issues/{number}

    @staticmethod
    def _compile(template: str) -> re.Pattern:
        pattern = re.sub(r"\\\{([^}]+)\\\}", lambda m: "(.+)" if m.group(1) in SLASHED_PARAMETERS else "([^/]+)",
                         re.escape(template))
        return re.compile(f"^{pattern}$")

    def operation(self, method: str, path: str) -> Operation | None:
        return next((op for op in self.operations if op.method == method.upper() and op.regex.match(path)), None)

    def check(self, method: str, url: str, body: bytes | str | None, status: int, api_prefix: str = "") -> list[str]:
        """Problems with one call (empty: it matches GitHub's description)."""
        path = unquote(urlsplit(url).path)
        if api_prefix and path.startswith(api_prefix):
            path = path[len(api_prefix):]
        op = self.operation(method, path)
        if op is None:
            return [f"{method} {path}: no such operation in GitHub's REST description"]
        problems = []
        spec = self.description["paths"][op.template][op.method.lower()]
        declared = set(spec.get("responses", {}))
        if str(status) not in declared and not (status >= 500 or status in (401, 403, 429)):
            problems.append(f"{method} {op.template}: status {status} is not one GitHub declares ({', '.join(sorted(declared))})")
        if body:
            problems.extend(self._check_body(op, spec, body))
        return problems

    def check_response(self, method: str, url: str, status: int, headers: dict, body: bytes | str | None,
                       query: dict | None = None) -> list[str]:
        """Problems with one answer (empty: GitHub could have given it)."""
        path = unquote(urlsplit(url).path)
        op = self.operation(method, path)
        response = self._response(op, status) if op else None
        if response is None:  # an unknown operation or status: `check` says so
            return []
        problems = []
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            problems.extend(self._check_answer(op, status, body))
        link = next((v for k, v in headers.items() if k.lower() == "link"), None)
        if link:
            problems.extend(self._check_link(op, response, path, link))
        if link is not None or "Link" in response.get("headers", {}):
            problems.extend(self._check_page_size(op, body, query or {}))
        return problems

    def _response(self, op: Operation, status: int) -> dict | None:
        response = self.description["paths"][op.template][op.method.lower()].get("responses", {}).get(str(status))
        if response and "$ref" in response:
            response = self.description["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
        return response

    def _check_answer(self, op: Operation, status: int, body: bytes | str | None) -> list[str]:
        label = f"{op.method} {op.template} {status}"
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return [f"{label}: the answer is not JSON"]
        if payload is None:
            return [f"{label}: no body, where GitHub answers with one"]
        validator = _response_validator(self.URI, op.template, op.method.lower(), str(status))
        return [f"{label}: answer: {error.message} at {list(error.absolute_path)}"
                for error in validator.iter_errors(payload)]

    @staticmethod
    def _check_link(op: Operation, response: dict, path: str, link: str) -> list[str]:
        label = f"{op.method} {op.template}"
        if "Link" not in response.get("headers", {}):
            return [f"{label}: sends a Link header, but GitHub's answer has none (the operation does not paginate)"]
        problems = []
        for url, rel in re.findall(r'<([^>]+)>;\s*rel="([^"]+)"', link):
            page = parse_qs(urlsplit(url).query).get("page", [""])[0]
            if rel not in ("next", "last", "first", "prev") or unquote(urlsplit(url).path) != path or not page.isdigit():
                problems.append(f"{label}: Link {rel} <{url}> is not a page of this list")
        return problems or ([] if re.search(r'rel="', link) else [f"{label}: Link header without links: {link!r}"])

    @staticmethod
    def _check_page_size(op: Operation, body: bytes | str | None, query: dict) -> list[str]:
        """A page holds at most `per_page` items (30 when not asked, 100 at most)."""
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return []
        items = payload if isinstance(payload, list) else next(
            (value for value in (payload or {}).values() if isinstance(value, list)), [])
        per_page = min(int(query.get("per_page", 30)), 100)
        if len(items) > per_page:
            return [f"{op.method} {op.template}: a page of {len(items)} items, more than per_page={per_page}"]
        return []

    def _check_body(self, op: Operation, spec: dict, body: bytes | str) -> list[str]:
        content = (spec.get("requestBody") or {}).get("content", {})
        if "application/json" not in content:
            return [f"{op.method} {op.template}: sends a body, but the operation takes none"]
        try:
            payload = json.loads(body)
        except ValueError:
            return [f"{op.method} {op.template}: request body is not JSON"]
        validator = _cached_validator(self.URI, op.template, op.method.lower())
        return [f"{op.method} {op.template}: request body: {error.message} at {list(error.absolute_path)}"
                for error in validator.iter_errors(payload)]


@functools.lru_cache(maxsize=256)
def _cached_validator(uri: str, template: str, method: str) -> jsonschema.Draft202012Validator:
    return _validator(rest_description(), uri, "paths", template, method, "requestBody", "content",
                      "application/json", "schema")


@functools.lru_cache(maxsize=256)
def _response_validator(uri: str, template: str, method: str, status: str) -> jsonschema.Draft202012Validator:
    operation = rest_description()["paths"][template][method]
    response = operation["responses"][status]
    if "$ref" in response:
        return _validator(rest_description(), uri, "components", "responses", response["$ref"].rsplit("/", 1)[-1],
                          "content", "application/json", "schema")
    return _validator(rest_description(), uri, "paths", template, method, "responses", status, "content",
                      "application/json", "schema")


@functools.lru_cache(maxsize=1)
def rest_contract() -> RestContract:
    return RestContract()


def webhook_key(event: str, action: str | None) -> str:
    """`issue_comment` + `created` -> `issue-comment-created`, the key in the webhooks description."""
    return "-".join(part.replace("_", "-") for part in (event, action) if part)


def webhook_problems(event: str, payload: dict) -> list[str]:
    description = webhooks_description()
    key = webhook_key(event, payload.get("action"))
    if key not in description["webhooks"]:
        return [f"{key}: no such webhook in GitHub's description"]
    validator = _webhook_validator(key)
    return [f"{key}: {error.message} at {list(error.absolute_path)}" for error in validator.iter_errors(payload)]


@functools.lru_cache(maxsize=64)
def _webhook_validator(key: str) -> jsonschema.Draft202012Validator:
    return _validator(webhooks_description(), "urn:github:webhooks", "webhooks", key, "post", "requestBody",
                      "content", "application/json", "schema")


def webhook_example(key: str) -> dict | None:
    """The description's own example payload for a webhook, where it has one (e.g. `ping`)."""
    description = webhooks_description()
    content = description["webhooks"][key]["post"]["requestBody"]["content"]["application/json"]
    for example in (content.get("examples") or {}).values():
        if "$ref" in example:
            example = description["components"]["examples"][example["$ref"].rsplit("/", 1)[-1]]
        return example.get("value")
    return None
