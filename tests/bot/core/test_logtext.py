from bot.core.logtext import clean_line, clean_text, decode


def test_decode_never_fails_on_invalid_utf8_and_normalizes_line_ends():
    assert decode(b"caf\xe9\r\nnext\rlast") == "caf\ufffd\nnext\nlast"


def test_clean_line_strips_actions_timestamp_and_ansi_colours():
    raw = "2026-11-20T10:11:12.1234567Z \x1b[31mE   torch._dynamo.exc.Unsupported\x1b[0m: boom\r\n"
    assert clean_line(raw) == "E   torch._dynamo.exc.Unsupported: boom"


def test_clean_line_drops_control_bytes_but_keeps_tabs():
    assert clean_line("a\x00b\x07c\td") == "abc\td"


def test_clean_text_cleans_every_line_of_bytes():
    assert clean_text(b"2026-01-01T00:00:00Z one\r\n\x1b[1mtwo\x1b[0m") == "one\ntwo"
