"""bot.core.printable: what a run printed, shown without acting on the terminal that shows it."""
from hypothesis import given, strategies as st

from bot.core.printable import printable
from bot.core.render import render


def test_terminal_sequences_go_and_other_controls_are_shown_escaped():
    assert printable("\x1b]0;PWNED\x07\x1b[2J\x1b[1;31mFAKE\x1b[0m") == "FAKE"
    assert printable("a\r\nb\rc\x00\u202eexe") == "a\nb\\x0dc\\x00\\u202eexe"
    assert printable("tab\tand\nnewline stay, as does ünïcode") == "tab\tand\nnewline stay, as does ünïcode"


def test_an_unterminated_title_sequence_hides_nothing_after_it():
    """One stray `ESC ]` in an exception message once cut the rest of the comment away."""
    assert printable("boom \x1b]0;x\nthe repro\nthe ladder") == "boom \\x1b]0;x\nthe repro\nthe ladder"
    assert printable("\x1b]8;;" + "u" * 5000 + "\x07tail").endswith("tail")


@given(st.text())
def test_nothing_printable_leaves_can_move_the_cursor_or_change_the_screen(text):
    shown = printable(text)
    assert not any(ord(c) < 0x20 and c not in "\t\n" or 0x7f <= ord(c) <= 0x9f for c in shown)


def test_text_and_markdown_templates_are_shown_printable(classifier):
    result = classifier.classify_text("torch._dynamo.exc.Unsupported: \x1b]0;title\x07graph break in \x1b[2Jforward")
    shown = render("verdict.txt.j2", result=result, category=classifier.ruleset.categories[result.category],
                   graph_break=None, request=None)
    assert "\x1b" not in shown and "signature:" in shown
