"""A repository path becomes a contents-API URL only as a path inside that repository."""
from __future__ import annotations

import pytest

from bot.app.github.contents import contents_url

REPO = "octo-org/octo-repo"


def test_each_segment_is_quoted_whole_and_a_dot_segment_refused():
    assert contents_url(REPO, "test/dynamo/test_repros.py") == "/repos/octo-org/octo-repo/contents/test/dynamo/test_repros.py"
    assert contents_url(REPO, "test/a b#c?d%2e.py") == "/repos/octo-org/octo-repo/contents/test/a%20b%23c%3Fd%252e.py"
    assert contents_url(REPO, ".github/pt2-triage.yml") == "/repos/octo-org/octo-repo/contents/.github/pt2-triage.yml"
    with pytest.raises(ValueError):
        contents_url(REPO, "test/../.github/pt2-triage.yml")


@pytest.mark.parametrize("path", ["../../victim-repo/contents/x.py", "test/../../x.py", "test/./x.py", "/test/x.py",
                                  "test//x.py", "test/", "test\\..\\x.py", ".."])
def test_a_path_that_is_not_inside_the_repository_is_refused(path):
    with pytest.raises(ValueError, match="not a path inside a repository"):
        contents_url(REPO, path)
