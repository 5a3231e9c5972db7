"""Markdown that stays inert whatever users put into it.

Everything the bot posts mixes its own markup with text it did not write: issue bodies, tracebacks,
repro scripts, log lines. These helpers make that text unable to escape its place: a code fence
cannot be closed from inside, an `@team` is not a mention, `<details>` or `<script>` in a log is
shown, not interpreted, and `<!-- pt2-triage -->`-style markers in output cannot impersonate ours.
"""
from __future__ import annotations

import re
import string

ZERO_WIDTH_SPACE = "\u200b"
BACKTICK_RUN = re.compile(r"`+")
FENCE_RUN = re.compile(r"`{3,}|~{3,}")
# @user, @org/team, also after punctuation; e-mail addresses (x@y.z) are not mentions on GitHub.
MENTION = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])")
# #123, GH-123 and owner/repo#123 cross-reference issues (and notify their subscribers' timelines);
# after a closing keyword in a PR body ("fixes octo/repo#7") they close the issue when the PR merges.
# Every `#` before a digit is broken: one after a word character is no reference of its own, but the
# end of `owner/repo#123` is. (`&#` is left alone: `&#35;` is an HTML entity, and `&` is escaped first.)
ISSUE_REFERENCE = re.compile(r"((?<!&)#|(?<![\w-])GH-)(?=\d)", re.IGNORECASE)
# A URL's scheme or a `www.` start: GitHub autolinks these, and a link to an issue or PR
# (https://github.com/o/r/issues/7) is a cross-reference like `o/r#7`, and closes it after "fixes".
AUTOLINK = re.compile(r"(?<=[A-Za-z]):(?=//)|(?<![\w.-])(www)(?=\.)", re.IGNORECASE)
HTML_SPECIALS = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
HTML_COMMENT_OPEN = "<!--"
ASCII_PUNCTUATION = frozenset(string.punctuation)  # what a backslash escapes in CommonMark
# a backslash escape (kept as it is) or a bare backtick (to be escaped), scanned left to right
ESCAPE_OR_BACKTICK = re.compile(r"\\[" + re.escape(string.punctuation) + r"]|`")


def fence(text: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside, so it cannot be closed early.

    Inside a fence GitHub renders no mentions and no HTML, so the content is kept verbatim except
    for `<!--`, which is broken so that bot markers quoted from a log never look like ours.
    """
    longest = max((len(run) for run in BACKTICK_RUN.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    body = unmarked(text)
    if not body.endswith("\n"):
        body += "\n"
    return f"{marker}{info_string(info)}\n{body}{marker}"


def info_string(info: str) -> str:
    """A fence's language tag: one word, no backticks (they would end the opening line's meaning)."""
    word = re.sub(r"[^A-Za-z0-9_+.-]", "", info)
    return word[:30]


def unmarked(text: str) -> str:
    """`text` with every `<!--` broken by a zero-width space: the App finds its own comments by their
    hidden markers, so text quoted from a log or a report must never carry one, even inside code."""
    return text.replace(HTML_COMMENT_OPEN, "<!" + ZERO_WIDTH_SPACE + "--")


def unmentioned(text: str) -> str:
    """`text` with a zero-width space after each mention's `@`. In a code span a mention is not live,
    but defusing it there too leaves a comment with no `@name` outside its fences at all: a property
    anyone can check with a search, which no longer depends on where each span begins and ends."""
    return MENTION.sub("@" + ZERO_WIDTH_SPACE, text)


def code_span(text: str) -> str:
    """Inline code for short user text (a file path, an exception type), on one line, that cannot be
    closed early, and carries no marker of ours and no mention."""
    flat = unmentioned(unmarked(" ".join(text.split())))
    longest = max((len(run) for run in BACKTICK_RUN.findall(flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def cell_code(text: str) -> str:
    """`code_span` for a table cell: GitHub splits a row at every `|`, inside a code span too, and the
    span's unclosed half would leave the text after it rendered as markdown (mentions, images)."""
    return code_span(text).replace("|", "\\|")


def inert(text: str) -> str:
    """User text for markdown prose: HTML escaped, mentions, issue references (`#7`, `o/r#7`), bare
    URLs and inline links defused, no fence openers.

    A zero-width space after `@` (and `#`, a URL's `:` or `www`, between `]` and `(`, after `!` before
    `[`, and inside runs of three backticks or tildes) keeps the text readable while GitHub no longer
    notifies, cross-references or closes an issue, links, loads an image, or opens a code block that
    would swallow the rest of the comment. Emphasis is
    left alone: escaping it hurts reading, and text from a run that the report puts in its own
    sentences goes in a code span (`quoted`), where nothing is markup.
    """
    escaped = "".join(HTML_SPECIALS.get(char, char) for char in text)
    escaped = unmentioned(escaped)
    escaped = ISSUE_REFERENCE.sub(lambda m: m.group(1) + ZERO_WIDTH_SPACE, escaped)
    escaped = AUTOLINK.sub(lambda m: m.group(0) + ZERO_WIDTH_SPACE, escaped)
    escaped = escaped.replace("](", "]" + ZERO_WIDTH_SPACE + "(").replace("![", "!" + ZERO_WIDTH_SPACE + "[")
    return FENCE_RUN.sub(lambda m: m.group(0)[0] + ZERO_WIDTH_SPACE + m.group(0)[1:], escaped)


def quoted(text: str, limit: int = 200) -> str:
    """Text a run printed (a function's name, a guard, an exception message), in a code span of the
    report's own sentence: on one line, at most `limit` characters, its backticks shown as `'` so
    that it cannot end the span and speak in the report's voice (`**Verdict: not a bug**`); like
    `code_span`, no marker of ours and no mention."""
    flat = " ".join(str(text).split()).replace("`", "'")
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return f"`{unmentioned(unmarked(flat))}`" if flat else "``"


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs become one space), at most `limit` characters."""
    flat = " ".join(text.split())
    return flat[: limit - 1] + "…" if len(flat) > limit else flat


def inert_line(text: str, limit: int = 300) -> str:
    """`inert`, on one line and at most `limit` characters: for table cells and list items.

    The code spans the text itself holds (torch writes "e.g. `if my_tensor.sum() > 0:`") stay code:
    inside one nothing is markup and GitHub shows an entity reference as typed, so HTML-escaping it
    would show `&gt;`. A span keeps its text as written, less our markers and mentions (`inert_code`);
    the rest is `inert` with each backtick that opens no span escaped (`inert_prose`), so the spans the
    output holds are exactly those found here. `|` is escaped everywhere: a table row splits at it.
    """
    flat = one_line(text, limit)
    parts, prose_start = [], 0
    for start, end in code_spans(flat):
        parts += [inert_prose(flat[prose_start:start]), inert_code(flat[start:end])]
        prose_start = end
    parts.append(inert_prose(flat[prose_start:]))
    return "".join(parts).replace("|", "\\|")


def code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each code span of one line of markdown, its backticks included, as CommonMark
    finds them: a run of n backticks opens a span that the next run of exactly n closes (inside it a
    backslash is only a backslash); with no such run the opener is plain backticks. Outside spans a
    backslash before ASCII punctuation escapes it, so "\\`" opens nothing.

    Alone in a paragraph, that is all that decides a line's spans: raw HTML and autolinks, which take
    precedence over them, cannot begin in `inert_line`'s output, whose `<` outside spans is escaped."""
    spans, position, unclosed = [], 0, set()  # unclosed: run lengths with no closing run further on
    while position < len(line):
        char = line[position]
        if char == "\\" and position + 1 < len(line) and line[position + 1] in ASCII_PUNCTUATION:
            position += 2
        elif char != "`":
            position += 1
        else:
            width = len(BACKTICK_RUN.match(line, position).group(0))
            closer = None if width in unclosed else _closing_run(line, position + width, width)
            if closer is None:
                unclosed.add(width)
                position += width
            else:
                spans.append((position, closer + width))
                position = closer + width
    return spans


def _closing_run(line: str, start: int, width: int) -> int | None:
    return next((run.start() for run in BACKTICK_RUN.finditer(line, start) if len(run.group(0)) == width), None)


def inert_prose(text: str) -> str:
    """`inert` for one line's text outside its code spans: each backtick there that is not escaped
    already is escaped, so that neither the zero-width spaces `inert` puts into a run nor the text
    around it can make it open a span that the source did not have."""
    return inert(ESCAPE_OR_BACKTICK.sub(lambda m: "\\`" if m.group(0) == "`" else m.group(0), text))


def inert_code(span: str) -> str:
    """A code span (its backticks included) as written, but for our markers and mentions: nothing in
    it is markup, and the zero-width spaces go after `<!` and `@`, never into a backtick run, so the
    span still closes where it did."""
    return unmentioned(unmarked(span))


def details(summary: str, body: str, *, open_: bool = False) -> str:
    """A collapsed section. The summary is ours (escaped anyway, code spans too: `<summary>` starts an
    HTML block, where backticks are no code); the body must already be safe markdown."""
    attribute = " open" if open_ else ""
    shown = inert(one_line(summary, 200)).replace("|", "\\|")
    return f"<details{attribute}><summary>{shown}</summary>\n\n{body.rstrip()}\n\n</details>"


def trim_lines(text: str, max_chars: int, *, keep: str = "tail") -> tuple[str, int]:
    """At most `max_chars` of `text`, cut at line boundaries, keeping the head or the tail.

    Returns the kept text and how many lines were dropped, so the caller can say so.
    """
    if len(text) <= max_chars:
        return text, 0
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    ordered = reversed(lines) if keep == "tail" else iter(lines)
    for line in ordered:
        if size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    if not kept:  # one enormous line: cut inside it
        cut = text[-max_chars:] if keep == "tail" else text[:max_chars]
        return cut, max(len(lines) - 1, 0)
    if keep == "tail":
        kept.reverse()
    return "\n".join(kept), len(lines) - len(kept)
