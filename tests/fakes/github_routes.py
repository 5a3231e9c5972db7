"""The fake GitHub's routes: what each REST operation it knows does to the fake repository's state,
and the answer, as GitHub gives it (tests/fakes/github.py completes each answer with the fields
GitHub's schema requires and pages the lists).

A handler takes (match, query, payload) and returns (status, headers, payload).
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from urllib.parse import unquote

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


class RepositoryRoutes:
    """The handlers, on the fake's state (part of `FakeGitHub`)."""

    def _token(self, match, query, payload):
        self.tokens_issued += 1
        return 201, {}, {"token": f"ghs_fake{self.tokens_issued}", "expires_at": "2099-01-01T00:00:00Z",
                         "permissions": {"issues": "write"}, "repository_selection": "all"}

    def _repo(self, match, query, payload):
        owner = self.repo.split("/")[0]
        return 200, {}, {"id": 101, "name": self.repo.split("/")[1], "full_name": self.repo,
                         "default_branch": self.default_branch, "private": self.private,
                         "owner": {"login": owner, "type": "Organization"}}

    def _get_content(self, match, query, payload):
        ref = query.get("ref", self.default_branch)
        text = self.files.get((ref, unquote(match.group(1))))
        if text is None:
            return 404, {}, {"message": "Not Found"}
        return 200, {}, self._content(unquote(match.group(1)), text, ref)

    def _put_content(self, match, query, payload):
        branch, path = payload["branch"], unquote(match.group(1))
        existing = self.files.get((branch, path))
        if existing is not None and payload.get("sha") != _sha(existing):
            return 409, {}, {"message": "sha does not match"}
        self.files[(branch, path)] = base64.b64decode(payload["content"]).decode()
        commit_sha = hashlib.sha1(f"{branch}{path}{len(self.commits)}".encode()).hexdigest()
        self.commits.append({"branch": branch, "path": path, "message": payload["message"], "sha": commit_sha})
        self.branches[branch] = commit_sha
        return (200 if existing is not None else 201), {}, {
            "content": self._content(path, self.files[(branch, path)], branch),
            "commit": {"sha": commit_sha, "message": payload["message"]}}

    def _content(self, path: str, text: str, ref: str) -> dict:
        api = f"{self.api}/repos/{self.repo}/contents/{path}?ref={ref}"
        html = f"https://github.com/{self.repo}/blob/{ref}/{path}"
        git = f"{self.api}/repos/{self.repo}/git/blobs/{_sha(text)}"
        return {"type": "file", "encoding": "base64", "name": path.rsplit("/", 1)[-1], "path": path, "sha": _sha(text),
                "size": len(text), "content": base64.b64encode(text.encode()).decode(), "url": api, "git_url": git,
                "html_url": html, "download_url": f"https://raw.githubusercontent.com/{self.repo}/{ref}/{path}",
                "_links": {"self": api, "git": git, "html": html}}

    def _list_comments(self, match, query, payload):
        number = int(match.group(1))
        return 200, {}, [self._comment_json(cid, c) for cid, c in self.comments.items() if c["issue"] == number]

    def _post_comment(self, match, query, payload):
        comment_id = next(self._ids)
        self.comments[comment_id] = {"issue": int(match.group(1)), "body": payload["body"], "user": self.bot}
        return 201, {}, self._comment_json(comment_id, self.comments[comment_id])

    def _patch_comment(self, match, query, payload):
        comment_id = int(match.group(1))
        if comment_id not in self.comments:
            return 404, {}, {"message": "Not Found"}
        self.comments[comment_id]["body"] = payload["body"]
        return 200, {}, self._comment_json(comment_id, self.comments[comment_id])

    def _comment_json(self, comment_id: int, comment: dict) -> dict:
        number = comment["issue"]
        return {"id": comment_id, "node_id": f"IC_{comment_id}", "body": comment["body"], "user": comment["user"],
                "html_url": f"https://github.com/{self.repo}/issues/{number}#issuecomment-{comment_id}",
                "url": f"{self.api}/repos/{self.repo}/issues/comments/{comment_id}",
                "issue_url": f"{self.api}/repos/{self.repo}/issues/{number}"}

    def _add_labels(self, match, query, payload):
        names = self.labels.setdefault(int(match.group(1)), [])
        names.extend(n for n in payload["labels"] if n not in names)
        return 200, {}, [{"id": i, "name": n, "color": "ededed", "default": False} for i, n in enumerate(names)]

    def _react(self, match, query, payload):
        self.reactions.append((int(match.group(1)), payload["content"]))
        return 201, {}, {"id": next(self._ids), "content": payload["content"], "user": self.bot}

    def _permission(self, match, query, payload):
        """A collaborator's role; on a public repository anyone else reads it (GitHub answers `read`
        for them), on a private one GitHub knows no such collaborator; no such account: 404."""
        login = unquote(match.group(1))
        if login not in self.permissions:
            if self.private or login in self.no_such_users:
                return 404, {}, {"message": "Not Found"}
            return 200, {}, {"permission": "read", "role_name": "read", "user": {"login": login}}
        role = self.permissions[login]  # a base role, or (a custom role's name, the base role it extends)
        role, base = role if isinstance(role, tuple) else (role, role)
        legacy = {"maintain": "write", "triage": "read"}.get(base, base)
        return 200, {}, {"permission": legacy, "role_name": role, "user": {"login": login}}

    def _run(self, match, query, payload):
        run = self.runs.get(int(match.group(1)))
        return (200, {}, run) if run else (404, {}, {"message": "Not Found"})

    def _run_jobs(self, match, query, payload):
        jobs = self.jobs.get(int(match.group(1)), [])
        return 200, {}, {"total_count": len(jobs), "jobs": jobs}

    def _job_logs(self, match, query, payload):
        return 302, {"Location": f"{self.storage}/logs/{match.group(1)}"}, None

    def _run_artifacts(self, match, query, payload):
        artifacts = self.artifacts.get(int(match.group(1)), [])
        return 200, {}, {"total_count": len(artifacts), "artifacts": artifacts}

    def _artifact_zip(self, match, query, payload):
        return 302, {"Location": f"{self.storage}/artifacts/{match.group(1)}"}, None

    def _dispatch(self, match, query, payload):
        self.dispatches.append({"workflow": unquote(match.group(1)), **payload})
        return 204, {}, None

    def _workflow_runs(self, match, query, payload):
        """The runs the dispatches of a workflow started, newest first, titled by its run-name."""
        workflow = unquote(match.group(1))
        sha = self.branches[self.default_branch]
        runs = [{"id": 90_000 + n, "name": workflow, "path": f".github/workflows/{workflow}",
                 "event": "workflow_dispatch", "status": "completed", "conclusion": "success", "head_sha": sha, "head_branch": dispatch["ref"],
                 "display_title": _run_name(workflow, dispatch["inputs"]), "pull_requests": [],
                 "html_url": f"https://github.com/{self.repo}/actions/runs/{90_000 + n}"}
                for n, dispatch in enumerate(self.dispatches) if dispatch["workflow"] == workflow]
        return 200, {}, {"total_count": len(runs), "workflow_runs": runs[::-1]}

    def _get_ref(self, match, query, payload):
        branch = unquote(match.group(1))
        sha = self.branches.get(branch)
        if sha is None:
            return 404, {}, {"message": "Not Found"}
        return 200, {}, {"ref": f"refs/heads/{branch}", "object": {"sha": sha, "type": "commit"}}

    def _create_ref(self, match, query, payload):
        branch = payload["ref"].removeprefix("refs/heads/")
        if branch in self.branches:
            return 422, {}, {"message": "Reference already exists"}
        self.branches[branch] = payload["sha"]
        return 201, {}, {"ref": payload["ref"], "object": {"sha": payload["sha"], "type": "commit"}}

    def _list_pulls(self, match, query, payload):
        head, state = query.get("head"), query.get("state", "open")
        found = [p for p in self.pulls if (head is None or f"{self.repo.split('/')[0]}:{p['head']}" == head)
                 and (state == "all" or p["state"] == state)]
        return 200, {}, [self._pull_json(p) for p in found]

    def _create_pull(self, match, query, payload):
        if any(p["head"] == payload["head"] and p["state"] == "open" for p in self.pulls):
            return 422, {}, {"message": "A pull request already exists"}
        pull = {"number": 100 + len(self.pulls), "head": payload["head"], "base": payload["base"],
                "title": payload["title"], "body": payload.get("body"), "draft": payload.get("draft", False),
                "state": "open"}
        self.pulls.append(pull)
        return 201, {}, self._pull_json(pull)

    def _update_pull(self, match, query, payload):
        pull = next(p for p in self.pulls if p["number"] == int(match.group(1)))
        pull.update({k: payload[k] for k in ("title", "body") if k in payload})
        return 200, {}, self._pull_json(pull)

    def _pull_json(self, pull: dict) -> dict:
        return {"number": pull["number"], "state": pull["state"], "draft": pull["draft"], "title": pull["title"],
                "body": pull["body"], "html_url": f"https://github.com/{self.repo}/pull/{pull['number']}",
                "head": {"ref": pull["head"]}, "base": {"ref": pull["base"]}}

    def _commit_pulls(self, match, query, payload):
        return 200, {}, [{"number": n, "state": "open"} for n in self.commit_pulls.get(match.group(1), [])]

    def _list_commit_comments(self, match, query, payload):
        return 200, {}, [{"id": cid, **c} for cid, c in self.commit_comments.items() if c["sha"] == match.group(1)]

    def _post_commit_comment(self, match, query, payload):
        comment_id = next(self._ids)
        self.commit_comments[comment_id] = {"sha": match.group(1), "body": payload["body"], "user": self.bot,
                                            "html_url": f"https://github.com/{self.repo}/commit/{match.group(1)}#commitcomment-{comment_id}"}
        return 201, {}, {"id": comment_id, **self.commit_comments[comment_id]}

    def _patch_commit_comment(self, match, query, payload):
        comment = self.commit_comments.get(int(match.group(1)))
        if comment is None:
            return 404, {}, {"message": "Not Found"}
        comment["body"] = payload["body"]
        return 200, {}, {"id": int(match.group(1)), **comment}


REPO = "/repos/{owner}/{repo}"
# (method, path after /repos/OWNER/NAME, GitHub's path template, handler, list key: None when the
# answer is not a list, "" for a list, or the key of the list in the answer)
ROUTES = (
    ("GET", r"", REPO, RepositoryRoutes._repo, None),
    ("GET", r"/contents/(.+)", REPO + "/contents/{path}", RepositoryRoutes._get_content, None),
    ("PUT", r"/contents/(.+)", REPO + "/contents/{path}", RepositoryRoutes._put_content, None),
    ("GET", r"/issues/(\d+)/comments", REPO + "/issues/{issue_number}/comments", RepositoryRoutes._list_comments, ""),
    ("POST", r"/issues/(\d+)/comments", REPO + "/issues/{issue_number}/comments", RepositoryRoutes._post_comment, None),
    ("PATCH", r"/issues/comments/(\d+)", REPO + "/issues/comments/{comment_id}", RepositoryRoutes._patch_comment, None),
    ("POST", r"/issues/(\d+)/labels", REPO + "/issues/{issue_number}/labels", RepositoryRoutes._add_labels, None),
    ("POST", r"/issues/comments/(\d+)/reactions", REPO + "/issues/comments/{comment_id}/reactions",
     RepositoryRoutes._react, None),
    ("GET", r"/collaborators/([^/]+)/permission", REPO + "/collaborators/{username}/permission",
     RepositoryRoutes._permission, None),
    ("GET", r"/actions/runs/(\d+)", REPO + "/actions/runs/{run_id}", RepositoryRoutes._run, None),
    ("GET", r"/actions/runs/(\d+)/jobs", REPO + "/actions/runs/{run_id}/jobs", RepositoryRoutes._run_jobs, "jobs"),
    ("GET", r"/actions/jobs/(\d+)/logs", REPO + "/actions/jobs/{job_id}/logs", RepositoryRoutes._job_logs, None),
    ("GET", r"/actions/runs/(\d+)/artifacts", REPO + "/actions/runs/{run_id}/artifacts", RepositoryRoutes._run_artifacts,
     "artifacts"),
    ("GET", r"/actions/artifacts/(\d+)/zip", REPO + "/actions/artifacts/{artifact_id}/{archive_format}",
     RepositoryRoutes._artifact_zip, None),
    ("POST", r"/actions/workflows/([^/]+)/dispatches", REPO + "/actions/workflows/{workflow_id}/dispatches",
     RepositoryRoutes._dispatch, None),
    ("GET", r"/actions/workflows/([^/]+)/runs", REPO + "/actions/workflows/{workflow_id}/runs",
     RepositoryRoutes._workflow_runs, "workflow_runs"),
    ("GET", r"/git/ref/heads/(.+)", REPO + "/git/ref/{ref}", RepositoryRoutes._get_ref, None),
    ("POST", r"/git/refs", REPO + "/git/refs", RepositoryRoutes._create_ref, None),
    ("GET", r"/pulls", REPO + "/pulls", RepositoryRoutes._list_pulls, ""),
    ("POST", r"/pulls", REPO + "/pulls", RepositoryRoutes._create_pull, None),
    ("PATCH", r"/pulls/(\d+)", REPO + "/pulls/{pull_number}", RepositoryRoutes._update_pull, None),
    ("GET", r"/commits/([0-9a-f]+)/pulls", REPO + "/commits/{commit_sha}/pulls", RepositoryRoutes._commit_pulls, ""),
    ("GET", r"/commits/([0-9a-f]+)/comments", REPO + "/commits/{commit_sha}/comments",
     RepositoryRoutes._list_commit_comments, ""),
    ("POST", r"/commits/([0-9a-f]+)/comments", REPO + "/commits/{commit_sha}/comments",
     RepositoryRoutes._post_commit_comment, None),
    ("PATCH", r"/comments/(\d+)", REPO + "/comments/{comment_id}", RepositoryRoutes._patch_commit_comment, None),
)
OPERATIONS = (("POST", "/app/installations/{installation_id}/access_tokens"),
              *((method, template) for method, _, template, _, _ in ROUTES))


def _run_name(workflow: str, inputs: dict) -> str:
    """A dispatched run's title: the workflow's `run-name` (this repository's copy of it, as users
    install it) with `${{ inputs.X }}` filled in; the workflow's name where there is none."""
    path = WORKFLOWS / workflow
    found = re.search(r"^run-name:\s*(.+)$", path.read_text(encoding="utf-8"), re.M) if path.is_file() else None
    if not found:
        return workflow
    filled = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: str(inputs.get(m.group(1), "")), found.group(1))
    return filled.strip()


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()
