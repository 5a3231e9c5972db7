"""What the client returns: small frozen records of the parts of GitHub's answers the App reads."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Comment:
    id: int
    html_url: str
    body: str = ""


@dataclass(frozen=True)
class WorkflowJob:
    id: int
    name: str
    conclusion: str | None
    html_url: str
    run_id: int
    failed_steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    size_in_bytes: int
    expired: bool


@dataclass(frozen=True)
class PullRequest:
    number: int
    html_url: str
    state: str
    draft: bool = False
    created: bool = False  # opened by this call (not found)


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    name: str
    path: str  # .github/workflows/<file>.yml
    event: str
    status: str
    conclusion: str | None
    head_sha: str
    head_branch: str | None
    html_url: str
    pull_requests: tuple[int, ...] = ()
    display_title: str = ""

    @property
    def workflow_file(self) -> str:
        return self.path.rsplit("/", 1)[-1].split("@", 1)[0]

    @classmethod
    def from_api(cls, data: dict) -> "WorkflowRun":
        return cls(id=data["id"], name=data.get("name") or "", path=data.get("path") or "", event=data.get("event") or "",
                   status=data.get("status") or "", conclusion=data.get("conclusion"), head_sha=data["head_sha"],
                   head_branch=data.get("head_branch"), html_url=data.get("html_url") or "",
                   pull_requests=tuple(pr["number"] for pr in data.get("pull_requests") or ()),
                   display_title=data.get("display_title") or "")


@dataclass(frozen=True)
class Download:
    content: bytes
    dropped_bytes: int = 0  # bytes cut from the front because the whole was over the cap
