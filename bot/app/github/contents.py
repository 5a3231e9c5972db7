"""Repository contents, branches and the draft PR: a file is committed only when its content
changed, a branch is created once, and the PR is found by its branch before one is opened."""
from __future__ import annotations

import base64
from urllib.parse import quote

from bot.app.github.errors import SERVER_ERRORS, GitHubError, NotFound
from bot.app.github.records import PullRequest
from bot.app.github.transport import RestClient, parse_repo


def contents_url(repo: str, path: str) -> str:
    """The contents-API URL of a file of `repo`. Each segment is quoted whole (`/`, `?`, `#`, `%` too),
    and a path with an empty, `.` or `..` segment or a backslash is refused (ValueError): an HTTP client
    resolves `..` in a URL, and `../../other-repo/contents/x` would leave this repository."""
    segments = path.split("/")
    if "\\" in path or any(segment in ("", ".", "..") for segment in segments):
        raise ValueError(f"not a path inside a repository: {path[:120]!r}")
    return f"/repos/{parse_repo(repo)}/contents/" + "/".join(quote(segment, safe="") for segment in segments)


class ContentsApi(RestClient):
    """Contents, branches, pull requests (part of `GitHub`)."""

    def default_branch(self, repo: str) -> str:
        return self.json("GET", f"/repos/{parse_repo(repo)}")["default_branch"]

    def file_text(self, repo: str, path: str, ref: str | None = None) -> tuple[str, str] | None:
        """(text, blob sha) of a file, or None when it does not exist (at `ref`, default branch if None)."""
        try:
            data = self.json("GET", contents_url(repo, path),
                             params={"ref": ref} if ref else None)
        except NotFound:
            return None
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        text = base64.b64decode(data.get("content") or "").decode("utf-8", errors="replace")
        return text, data["sha"]

    def branch_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = self.json("GET", f"/repos/{parse_repo(repo)}/git/ref/heads/{quote(branch)}")
        except NotFound:
            return None
        return data["object"]["sha"]

    def ensure_branch(self, repo: str, branch: str, from_sha: str) -> bool:
        """Create `branch` at `from_sha` unless it exists; True when it was created now."""
        if self.branch_sha(repo, branch):
            return False
        try:
            self.request("POST", f"/repos/{parse_repo(repo)}/git/refs",
                         json={"ref": f"refs/heads/{branch}", "sha": from_sha})
        except GitHubError as exc:
            if exc.status == 422 and self.branch_sha(repo, branch):  # created concurrently
                return False
            raise
        return True

    def put_file(self, repo: str, path: str, text: str, branch: str, message: str) -> str | None:
        """Commit `text` to `path` on `branch`; the new commit's sha, or None when nothing changed."""
        current = self.file_text(repo, path, ref=branch)
        if current and current[0] == text:
            return None
        payload = {"message": message, "branch": branch,
                   "content": base64.b64encode(text.encode("utf-8")).decode("ascii")}
        if current:
            payload["sha"] = current[1]
        data = self.json("PUT", contents_url(repo, path), json=payload)
        return data["commit"]["sha"]

    def find_pull(self, repo: str, branch: str) -> PullRequest | None:
        """The PR from `branch` of this repo, open or closed (a closed one is not reopened or duplicated)."""
        owner = parse_repo(repo).split("/")[0]
        data = self.json("GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{branch}", "state": "all"})
        if not data:
            return None
        pr = sorted(data, key=lambda p: p["state"] != "open")[0]
        return PullRequest(pr["number"], pr["html_url"], pr["state"], bool(pr.get("draft")))

    def upsert_draft_pull(self, repo: str, branch: str, base: str, title: str, body: str) -> PullRequest:
        """The one draft PR from `branch`: opened once, its title and body refreshed afterwards."""
        existing = self.find_pull(repo, branch)
        if existing:
            if existing.state == "open":
                self.request("PATCH", f"/repos/{parse_repo(repo)}/pulls/{existing.number}",
                             json={"title": title, "body": body})
            return existing
        try:
            data = self.json("POST", f"/repos/{parse_repo(repo)}/pulls", retry_server_errors=False,
                             json={"title": title, "head": branch, "base": base, "body": body, "draft": True})
        except GitHubError as exc:
            if (exc.status == 422 or exc.status in SERVER_ERRORS) and (found := self.find_pull(repo, branch)):
                return found
            raise
        return PullRequest(data["number"], data["html_url"], data["state"], bool(data.get("draft")), created=True)
