"""A webhook event as the App's features read it: the event's name and action, its payload, and the
issue or workflow run it is about, taken from the payload defensively (pure).

A signed payload is GitHub's, but a feature's `parse` still never trusts its shape: a member that
should be an object and is not reads as empty, a number that is not an integer as None, so a
malformed delivery is "not for me", never an exception in the web process.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bot.app.github.records import WorkflowRun


def payload_object(value: object) -> dict:
    """A payload member that should be an object; anything else reads as empty."""
    return value if isinstance(value, dict) else {}


def payload_integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def payload_string(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Event:
    """One delivery's event (`X-GitHub-Event`), its action and payload, and the @name it may address."""

    name: str
    action: str | None
    payload: dict = field(hash=False)
    bot_name: str = "pt2-triage"

    def member(self, key: str) -> dict:
        return payload_object(self.payload.get(key))

    @property
    def repo(self) -> str | None:
        return payload_string(self.member("repository").get("full_name"))

    @property
    def installation_id(self) -> int | None:
        return payload_integer(self.member("installation").get("id"))

    @property
    def default_branch(self) -> str:
        return payload_string(self.member("repository").get("default_branch")) or "main"

    @property
    def sender(self) -> str | None:
        return payload_string(self.member("sender").get("login"))

    @property
    def workflow_run(self) -> WorkflowRun | None:
        """The event's workflow run, or None when the payload does not hold one."""
        data = self.member("workflow_run")
        if payload_integer(data.get("id")) is None or payload_string(data.get("head_sha")) is None:
            return None
        return WorkflowRun.from_api(data)


@dataclass(frozen=True)
class Issue:
    """The parts of an issue (or of a pull request, which GitHub also calls an issue) the App reads."""

    number: int
    title: str
    body: str
    html_url: str | None = None
    labels: tuple[str, ...] = ()
    is_pull_request: bool = False

    @classmethod
    def from_payload(cls, value: object) -> "Issue | None":
        data = payload_object(value)
        number = payload_integer(data.get("number"))
        if number is None:
            return None
        labels = tuple(name for label in data.get("labels") or () if isinstance(label, dict)
                       and isinstance(name := label.get("name"), str))
        return cls(number, payload_string(data.get("title")) or "", payload_string(data.get("body")) or "",
                   payload_string(data.get("html_url")), labels, data.get("pull_request") is not None)

    @property
    def text(self) -> str:
        """Title and body as the classifier reads a report (and as the real-issue corpus stores one)."""
        return f"# {self.title}\n\n{self.body}"

    def has_label(self, name: str) -> bool:
        return name.lower() in {label.lower() for label in self.labels}
