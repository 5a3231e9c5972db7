"""Regenerate tests/bot/fixtures/webhooks/*.json: spec-valid payloads with realistic values.

GitHub's webhook description ships whole example payloads for a few events only (`ping` is one:
it is used as is). For the others this fills every *required* field from the event's schema with
a plausible value, then lays the values a test cares about (repository, issue text, label, comment,
workflow run) over it. The result is validated before it is written; tests/contract re-validates it.

    .venv/bin/python -m tests.contract.build_webhook_fixtures
"""
from __future__ import annotations

import copy
import json

from .openapi import ROOT, webhook_example, webhook_problems, webhooks_description

OUT = ROOT / "tests" / "bot" / "fixtures" / "webhooks"
REPO, OWNER, INSTALLATION = "octo-org/octo-repo", "octo-org", 4242
ISSUE_BODY = (ROOT / "examples" / "graph_break_fullgraph.md").read_text(encoding="utf-8")


def _user(login: str, kind: str = "User", id_: int = 1) -> dict:
    api = f"https://api.github.com/users/{login}"
    return {"login": login, "id": id_, "node_id": f"U_{id_}", "avatar_url": f"https://avatars.githubusercontent.com/u/{id_}",
            "gravatar_id": "", "url": api, "html_url": f"https://github.com/{login}", "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}", "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs", "repos_url": f"{api}/repos", "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events", "type": kind, "site_admin": False,
            "user_view_type": "public"}


def _resolve(description: dict, schema):
    while isinstance(schema, dict) and "$ref" in schema:
        schema = description["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def sample(description: dict, schema, name: str = "value", depth: int = 0, items: bool = False):
    """A minimal instance of `schema`: required properties only, the first non-null choice; an array
    is empty, or with `items` holds one minimal item (and optional arrays are there too)."""
    schema = _resolve(description, schema)
    if schema is None or depth > 14:
        return None
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(description, o) for o in schema[key]]
            concrete = [o for o in options if o and o.get("type") != "null"]
            return sample(description, (concrete or options)[0], name, depth + 1, items)
    if "allOf" in schema:
        merged = {}
        for part in schema["allOf"]:
            value = sample(description, part, name, depth + 1, items)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    if "enum" in schema:
        return next((v for v in schema["enum"] if v is not None), None)
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    properties = schema.get("properties", {})
    if kind == "object" or properties:
        if {"login", "id", "avatar_url"} <= set(properties):
            user = _user("octocat")
            return {**{key: sample(description, properties.get(key, {}), key, depth + 1, items)
                       for key in schema.get("required", []) if key not in user}, **user}
        keys = list(schema.get("required", []))
        if items:  # optional lists too, so that each item a fake lists can be completed
            keys += [key for key, value in properties.items()
                     if key not in keys and (_resolve(description, value) or {}).get("type") == "array"]
        return {key: sample(description, properties.get(key, {}), key, depth + 1, items) for key in keys}
    if kind == "array":
        return [sample(description, schema.get("items", {}), name, depth + 1, items)] if items else []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "uri" or name.endswith("url"):
            return f"https://api.github.com/{name}"
        if fmt == "date-time" or name.endswith("_at"):
            return "2026-11-20T10:11:12Z"
        if fmt == "email":
            return "octocat@github.com"
        return name
    return None


def overlay(base, values):
    if isinstance(base, dict) and isinstance(values, dict):
        merged = dict(base)
        for key, value in values.items():
            merged[key] = overlay(base.get(key), value)
        return merged
    return copy.deepcopy(values)


def repository() -> dict:
    return {"id": 101, "node_id": "R_101", "name": "octo-repo", "full_name": REPO, "private": False,
            "owner": _user(OWNER, "Organization", 9), "html_url": f"https://github.com/{REPO}",
            "url": f"https://api.github.com/repos/{REPO}", "default_branch": "main"}


def issue(number: int, body: str, title: str, labels: list[dict], pull_request: bool = False) -> dict:
    data = {"number": number, "id": 5000 + number, "title": title, "body": body, "state": "open",
            "user": _user("reporter", id_=77), "labels": labels, "html_url": f"https://github.com/{REPO}/issues/{number}",
            "url": f"https://api.github.com/repos/{REPO}/issues/{number}"}
    if pull_request:
        data["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}",
                                "html_url": f"https://github.com/{REPO}/pull/{number}",
                                "diff_url": f"https://github.com/{REPO}/pull/{number}.diff",
                                "patch_url": f"https://github.com/{REPO}/pull/{number}.patch"}
    return data


LABEL = {"id": 11, "node_id": "LA_11", "url": f"https://api.github.com/repos/{REPO}/labels/pt2-triage",
         "name": "pt2-triage", "color": "d93f0b", "default": False, "description": "Triage with pt2-triage"}
COMMON = {"repository": repository(), "installation": {"id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="},
          "sender": _user("maintainer", id_=55)}
TITLE = "torch.compile(fullgraph=True) fails on a data-dependent branch"


def workflow_run(run_id: int, name: str, path: str, conclusion: str, title: str, prs: list[int]) -> dict:
    return {"id": run_id, "name": name, "path": path, "display_title": title, "event": "pull_request" if prs else "workflow_dispatch",
            "status": "completed", "conclusion": conclusion, "head_sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "head_branch": "feature", "run_attempt": 1, "run_number": 7,
            "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}",
            "repository": repository(), "head_repository": repository(),  # this repository's own code ran
            "pull_requests": [{"id": 900 + n, "number": n, "url": f"https://api.github.com/repos/{REPO}/pulls/{n}",
                               "head": {"ref": "feature", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                                        "repo": {"id": 101, "name": "octo-repo", "url": f"https://api.github.com/repos/{REPO}"}},
                               "base": {"ref": "main", "sha": "0000000000000000000000000000000000000001",
                                        "repo": {"id": 101, "name": "octo-repo", "url": f"https://api.github.com/repos/{REPO}"}}}
                              for n in prs]}


FIXTURES = {
    "issues_labeled": ("issues-labeled", {**COMMON, "action": "labeled", "label": LABEL,
                                          "issue": issue(12, ISSUE_BODY, TITLE, [LABEL])}),
    "issues_opened": ("issues-opened", {**COMMON, "action": "opened", "issue": issue(13, ISSUE_BODY, TITLE, [])}),
    "issues_edited": ("issues-edited", {**COMMON, "action": "edited", "changes": {"body": {"from": "typo"}},
                                        "issue": issue(13, ISSUE_BODY, TITLE, [])}),
    "issue_comment_created": ("issue-comment-created", {
        **COMMON, "action": "created", "issue": issue(12, ISSUE_BODY, TITLE, [LABEL]),
        "comment": {"id": 3001, "node_id": "IC_3001", "body": "@pt2-triage run gpu please", "user": _user("maintainer", id_=55),
                    "html_url": f"https://github.com/{REPO}/issues/12#issuecomment-3001",
                    "url": f"https://api.github.com/repos/{REPO}/issues/comments/3001",
                    "issue_url": f"https://api.github.com/repos/{REPO}/issues/12", "author_association": "MEMBER"}}),
    "workflow_run_completed_ci_failure": ("workflow-run-completed", {
        **COMMON, "action": "completed", "workflow": {"id": 71, "name": "trunk", "path": ".github/workflows/trunk.yml"},
        "workflow_run": workflow_run(30433642, "trunk", ".github/workflows/trunk.yml", "failure", "Fix the thing", [7])}),
    "workflow_run_completed_runner": ("workflow-run-completed", {
        **COMMON, "action": "completed",
        "workflow": {"id": 72, "name": "pt2-triage runner", "path": ".github/workflows/pt2-triage-runner.yml"},
        "workflow_run": workflow_run(30433700, "pt2-triage runner", ".github/workflows/pt2-triage-runner.yml", "success",
                                     "pt2-triage JOBKEY (issue 12, cpu)", [])}),
}


def build() -> dict[str, dict]:
    description = webhooks_description()
    built = {"ping": webhook_example("ping")}
    for name, (key, values) in FIXTURES.items():
        schema = description["webhooks"][key]["post"]["requestBody"]["content"]["application/json"]["schema"]
        built[name] = overlay(sample(description, schema), values)
    return built


def event_of(name: str) -> str:
    return next(event for event in ("issue_comment", "workflow_run", "issues", "ping") if name.startswith(event))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, payload in build().items():
        problems = webhook_problems(event_of(name), payload)
        if problems:
            raise SystemExit(f"{name}: not valid against GitHub's schema: {problems[:5]}")
        (OUT / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {OUT / (name + '.json')}")


if __name__ == "__main__":
    main()
