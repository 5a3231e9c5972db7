"""Issue and commit comments (the one marked comment, found and edited, never posted twice; a
reply posted once per job step), labels, reactions and permission checks."""
from __future__ import annotations

import logging
from urllib.parse import quote

from bot.app.github.errors import NotFound
from bot.app.github.records import Comment
from bot.app.github.transport import RestClient, parse_repo

log = logging.getLogger("pt2_triage.github")

BASE_ROLES = ("admin", "maintain", "write", "triage", "read")


def is_marked_bot_comment(item: dict, marker: str, bot_login: str | None = None) -> bool:
    """Ours: its body starts with the marker (every marked template writes it as its first line) and
    our bot account wrote it: `bot_login` (`<app-slug>[bot]`) where the client knows it, else any bot.

    Anywhere but the start, the marker proves nothing: a quoted issue text or CI log line can carry it
    into one of our own comments, and another bot may quote it too. Taking such a comment for ours
    would overwrite it, or trust state it carries.
    """
    return written_by_us(item, bot_login) and (item.get("body") or "").lstrip().startswith(marker)


def written_by_us(item: dict, bot_login: str | None) -> bool:
    """Our bot account wrote this comment (any bot account, where the login is not known)."""
    user = item.get("user") or {}
    return user.get("type") == "Bot" and bot_login in (None, user.get("login"))


class IssuesApi(RestClient):
    """Comments, labels, reactions, permissions (part of `GitHub`)."""

    def find_marked_comment(self, repo: str, number: int, marker: str) -> Comment | None:
        """The bot's comment on an issue/PR: it starts with `marker` and our bot wrote it
        (`is_marked_bot_comment`). A marker pasted or quoted anywhere else does not make it ours.
        """
        for item in self.paginate(f"/repos/{parse_repo(repo)}/issues/{int(number)}/comments"):
            if is_marked_bot_comment(item, marker, self.bot_login):
                return Comment(item["id"], item["html_url"], item.get("body") or "")
        return None

    def edit_comment(self, url: str, body: str) -> Comment:
        data = self.json("PATCH", url, json={"body": body})
        return Comment(data["id"], data["html_url"], body)

    def edit_known_comment(self, url: str, body: str) -> Comment | None:
        """Edit a comment whose id the store remembers; None when someone deleted it meanwhile."""
        try:
            return self.edit_comment(url, body)
        except NotFound:
            return None

    def upsert_comment(self, repo: str, number: int, body: str, marker: str, known_id: int | None = None) -> Comment:
        """Edit the one marked comment, or post it when there is none: never a second one."""
        path = f"/repos/{parse_repo(repo)}/issues"
        if known_id:
            edited = self.edit_known_comment(f"{path}/comments/{int(known_id)}", body)
            if edited:
                return edited
            log.info("comment %s on %s#%s was deleted; posting a new one", known_id, repo, number)

        def brought_up_to_date() -> Comment | None:
            existing = self.find_marked_comment(repo, number, marker)
            if existing is None or existing.body == body:
                return existing
            return self.edit_comment(f"{path}/comments/{existing.id}", body)

        return self.create_once(lambda: self._post_comment(f"{path}/{int(number)}/comments", body),
                                brought_up_to_date)

    def post_comment(self, repo: str, number: int, body: str, reply_id: str | None = None) -> Comment:
        """A plain reply (help, refusals), posted once per `reply_id` (the job and step it answers for).

        The id goes into the reply as its hidden last line, so a reply that a 5xx or a lost answer
        may have posted is found by it before it is posted again. Without an id a failure is not
        re-sent here: it goes to the caller.
        """
        path = f"/repos/{parse_repo(repo)}/issues/{int(number)}/comments"
        if reply_id is None:
            return self._post_comment(path, body)
        signed = f"{body.rstrip()}\n\n{reply_line(reply_id)}"
        return self.create_once(lambda: self._post_comment(path, signed),
                                lambda: self.find_reply(repo, number, reply_id))

    def find_reply(self, repo: str, number: int, reply_id: str) -> Comment | None:
        """Our reply that ends with this id's hidden line (`post_comment`), or None."""
        line = reply_line(reply_id)
        for item in self.paginate(f"/repos/{parse_repo(repo)}/issues/{int(number)}/comments"):
            if written_by_us(item, self.bot_login) and (item.get("body") or "").rstrip().endswith(line):
                return Comment(item["id"], item["html_url"], item.get("body") or "")
        return None

    def _post_comment(self, path: str, body: str) -> Comment:
        data = self.json("POST", path, json={"body": body}, retry_server_errors=False)
        return Comment(data["id"], data["html_url"], body)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        if labels:
            self.request("POST", f"/repos/{parse_repo(repo)}/issues/{int(number)}/labels", json={"labels": list(labels)})

    def react(self, repo: str, comment_id: int, content: str = "eyes") -> None:
        """A reaction on an issue comment; GitHub answers 200 for one that already exists."""
        self.request("POST", f"/repos/{parse_repo(repo)}/issues/comments/{int(comment_id)}/reactions",
                     json={"content": content})

    def permission(self, repo: str, username: str) -> str:
        """admin | maintain | write | triage | read | none: the user's role, or for an organization's
        custom role (whose `role_name` is the name the organization gave it) the base permission it
        extends (`permission`: admin, write, read or none)."""
        try:
            data = self.json("GET", f"/repos/{parse_repo(repo)}/collaborators/{quote(username, safe='')}/permission")
        except NotFound:
            return "none"
        role = data.get("role_name")
        return role if role in BASE_ROLES else (data.get("permission") or "none")

    # -- commits and their comments (CI failures with no PR)

    def pulls_for_commit(self, repo: str, sha: str) -> list[int]:
        data = self.json("GET", f"/repos/{parse_repo(repo)}/commits/{quote(sha)}/pulls")
        return [pr["number"] for pr in data if pr.get("state") == "open"]

    def upsert_commit_comment(self, repo: str, sha: str, body: str, marker: str, known_id: int | None = None) -> Comment:
        """The one marked comment on a commit (CI failures with no PR), like `upsert_comment`."""
        base = f"/repos/{parse_repo(repo)}"
        edited = self.edit_known_comment(f"{base}/comments/{int(known_id)}", body) if known_id else None
        if edited:
            return edited

        def brought_up_to_date() -> Comment | None:
            for item in self.paginate(f"{base}/commits/{quote(sha)}/comments"):
                if is_marked_bot_comment(item, marker, self.bot_login):
                    return self.edit_comment(f"{base}/comments/{item['id']}", body)
            return None

        return self.create_once(lambda: self._post_comment(f"{base}/commits/{quote(sha)}/comments", body),
                                brought_up_to_date)


def reply_line(reply_id: str) -> str:
    """The hidden last line that names the job step a reply answers for."""
    return f"<!-- pt2-triage:reply {reply_id} -->"
