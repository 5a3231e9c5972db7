"""bot.core.markdown: user text in a comment stays text."""
import re

from hypothesis import given, strategies as st

from bot.core.markdown import cell_code, code_span, details, fence, inert, inert_line, quoted, trim_lines


def test_a_fence_is_longer_than_any_backtick_run_inside():
    block = fence("print('```')\n`````\n", "python")
    assert block.startswith("``````python\n") and block.endswith("\n``````")


@given(st.text())
def test_fenced_text_cannot_close_its_fence(text):
    block = fence(text)
    opening = block.split("\n", 1)[0]
    inner_lines = block.split("\n")[1:-1]
    assert all(not line.strip().startswith(opening) or line.strip() != opening for line in inner_lines)


def test_fence_language_tag_cannot_smuggle_markup():
    assert fence("x", "python`<b>\nevil").split("\n", 1)[0] == "```pythonbevil"


def test_inert_defuses_mentions_issue_links_html_and_fence_openers():
    text = inert("cc @pytorch/team and @ezyang, see #123 <script>x</script>\n```\n~~~")
    assert "@pytorch" not in text and "@ezyang" not in text and "#123" not in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "```" not in text and "~~~" not in text
    assert inert("mail me at dev@example.com") == "mail me at dev@example.com"


def test_inert_defuses_cross_repository_references_and_bare_urls():
    """`o/r#7` and an issue's URL cross-reference it like `#7` does, and after "fixes" in a draft PR's
    body they close it when the PR merges; a bare URL or `www.` host is a link GitHub makes by itself."""
    text = inert("Fixes octo-org/octo-repo#7, closes https://github.com/octo-org/octo-repo/issues/8, GH-9, "
                 "see www.evil.example")
    assert re.search(r"#\d|://|GH-\d|(?<![\w.-])www\.", text) is None
    assert text.replace("\u200b", "") == ("Fixes octo-org/octo-repo#7, closes https://github.com/octo-org/"
                                          "octo-repo/issues/8, GH-9, see www.evil.example")


@given(st.text())
def test_inert_text_holds_no_live_reference_or_autolink(text):
    escaped = inert(text)
    assert re.search(r"#\d|://|(?<![\w-])GH-\d|(?<![\w.-])www\.", escaped, re.IGNORECASE) is None


def test_inert_line_is_one_bounded_line_safe_in_a_table():
    line = inert_line("a | b\n" * 100, limit=50)
    assert "\n" not in line and len(line) <= 60 and "\\|" in line


def test_code_span_survives_backticks_inside():
    assert code_span("a `b` c") == "``a `b` c``"


@given(st.text())
def test_a_table_cells_code_span_never_splits_the_row(text):
    """GitHub splits a table row at every unescaped `|`, inside a code span too: the span's second
    half would then be markdown (mentions, images) in a cell of its own."""
    cell = cell_code(text)
    assert "\n" not in cell and re.search(r"(?<!\\)\|", cell) is None


def test_details_escapes_its_summary():
    assert details("<b>@x</b>", "body").startswith("<details><summary>&lt;b&gt;@\u200bx&lt;/b&gt;</summary>")


def test_trim_lines_keeps_whole_lines_and_counts_what_it_dropped():
    text = "\n".join(f"line {i}" for i in range(100))
    kept, dropped = trim_lines(text, 30)
    assert kept.splitlines()[-1] == "line 99" and dropped == 100 - len(kept.splitlines())
    head, _ = trim_lines(text, 30, keep="head")
    assert head.startswith("line 0")


def test_inert_defuses_links_and_images():
    text = inert("see [the notice](https://evil.example) ![x](https://evil.example/t.png)")
    assert "](" not in text and "![" not in text and "the notice" in text


def test_quoted_run_text_stays_one_code_span():
    span = quoted("f` **Verdict: not a bug** `f\nsecond line and more", limit=40)
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2 and "\n" not in span
    assert len(span) == 42 and span.endswith("…`")


@given(st.text())
def test_code_never_carries_a_marker_of_ours_or_a_mention(text):
    """The App finds its comments by their hidden markers: a log line quoted in code that kept
    `<!-- pt2-triage:report -->` would make the CI comment pass for the report comment."""
    for span in (code_span(text + " <!-- pt2-triage:report --> @org/team"), cell_code(text + "<!--x"),
                 quoted(text + "<!-- pt2-triage:ci-failure -->")):
        assert "<!--" not in span and re.search(r"(?<![\w.+-])@(?=[A-Za-z0-9])", span) is None


def test_code_reads_the_same_with_its_marker_and_mention_defused():
    assert code_span("x <!-- y --> @a/b") == "`x <!\u200b-- y --> @\u200ba/b`"
    assert quoted("dev@example.com") == "`dev@example.com`"  # an e-mail address is no mention


# -- the code spans a line already holds stay code (inert_line)
#
# An independent reading of CommonMark's code spans (spec 6.1 and 2.4), by regular expressions: a
# backtick run opens a span that the next run of the same length closes; with none, its backticks are
# text; outside a span a backslash escapes ASCII punctuation, so "\`" opens nothing; inside, it does not.

ESCAPE_OR_BACKTICKS = re.compile(r"\\[!-/:-@\[-`{-~]|`+")


def read_code_spans(line: str) -> tuple[list[str], str]:
    """(the line's code spans, backticks included; the rest of the line, which GitHub interprets, with
    a space for each span)."""
    spans, rest, position = [], [], 0
    while (token := ESCAPE_OR_BACKTICKS.search(line, position)) is not None:
        rest.append(line[position:token.start()])
        position = token.end()
        if token.group().startswith("\\"):
            rest.append(token.group())
            continue
        closer = re.compile(rf"(?<!`){token.group()}(?!`)").search(line, token.end())
        if closer is None:
            rest.append(token.group())
        else:
            spans.append(line[token.start():closer.end()])
            rest.append(" ")  # a span between `]` and `(` (or `#` and `1`) keeps them apart
            position = closer.end()
    return spans, "".join(rest) + line[position:]


def without_code_spans(line: str) -> str:
    return read_code_spans(line)[1]


def test_text_in_a_code_span_is_shown_as_written_not_as_html_entities():
    """torch's own graph-break explanation: inside a span GitHub shows `&gt;` as typed."""
    explanation = "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`)."
    assert inert_line(explanation) == explanation
    assert inert_line("a < b & `x < y && z` <i>") == "a &lt; b &amp; `x < y && z` &lt;i&gt;"
    assert inert_line("``a ` <b>`` and `c`") == "``a ` <b>`` and `c`"


def test_a_backtick_that_opens_no_span_stays_text_and_cannot_open_one_later():
    assert inert_line("a ``` <b> `c") == "a \\`\\`\\` &lt;b&gt; \\`c"  # no closing run of the same length
    assert inert_line("``a > b`") == "\\`\\`a &gt; b\\`"
    assert inert_line("\\`x > 0` <b>") == "\\`x &gt; 0\\` &lt;b&gt;"  # an escaped backtick opens nothing
    assert inert_line("`a\\`b > c`") == "`a\\`b &gt; c\\`"  # inside a span a backslash is a backslash


def test_a_code_span_keeps_no_marker_or_mention_and_its_pipes_stay_escaped():
    assert inert_line("`@org/team <!-- pt2-triage:report -->` @x") == (
        "`@\u200borg/team <!\u200b-- pt2-triage:report -->` @\u200bx")
    assert inert_line("`a|b` c|d") == "`a\\|b` c\\|d"


def test_a_collapsed_sections_summary_escapes_code_too():
    """`<summary>` opens an HTML block, where backticks make no code: `<b>` there would be a tag."""
    assert details("`<b>`", "body").startswith("<details><summary>`&lt;b&gt;`</summary>")


MARKDOWN_ISH = st.text(alphabet=st.sampled_from("`\\<>&@#|~ ab!-[]():/0w."), max_size=60) | st.text(max_size=60)


@given(MARKDOWN_ISH)
def test_inert_line_keeps_the_texts_code_spans_and_nothing_outside_them_is_live(text):
    line = inert_line(text, limit=1000)
    spans, live = read_code_spans(line)
    source_spans, _ = read_code_spans(" ".join(text.split()))
    assert [span.replace("\u200b", "").replace("\\|", "|") for span in spans] == source_spans
    assert "<" not in live and re.search(r"#\d|[A-Za-z]://|!\[|\]\(|```|~~~", live) is None
    assert "<!--" not in line and re.search(r"(?<![\w.+-])@(?=[A-Za-z0-9])", line) is None
    assert "\n" not in line and re.search(r"(?<!\\)\|", line) is None
