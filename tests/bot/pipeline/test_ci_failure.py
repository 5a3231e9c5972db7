"""bot/pipeline/ci_failure: the CI comment, from job logs and the state an earlier comment remembers."""
from __future__ import annotations

import base64
import json
import re
import zlib

import pytest

from bot.pipeline.ci_failure import (CI_MARKER, CI_STATE_OPEN, JobLog, analyze_run, decode_state, merge_earlier_runs,
                                     render_ci_comment)
from tests.paths import FIXTURES

REPO = "octo-org/octo-repo"
MENTION = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])")


@pytest.fixture
def ci_report(classifier):
    def make(log: bytes = (FIXTURES / "inductor_cpp_compile_error.log").read_bytes(), run_id: int = 502):
        job = JobLog(61, "test (inductor, 1, 2)", "https://github.com/x/61", log, ("Test",))
        return analyze_run(REPO, run_id, f"https://github.com/{REPO}/actions/runs/{run_id}", "trunk", "6dcb09b5",
                           (7,), [job], classifier)
    return make


def state_comment(runs: list[dict]) -> str:
    """A comment carrying `runs` as its hidden state, the way anyone who can edit (or quote) it could write one."""
    return f"{CI_MARKER}\n{CI_STATE_OPEN}{base64.b64encode(zlib.compress(json.dumps(runs).encode())).decode()} -->\n"


def remembered(**changes) -> dict:
    run = {"run_id": 501, "run_url": f"https://github.com/{REPO}/actions/runs/501", "workflow": "trunk",
           "head_sha": "deadbeef00", "jobs": [{"name": "job", "url": "u", "category": "graph_break",
                                              "title": "Graph break", "test": None}]}
    return {**run, **changes}


@pytest.mark.parametrize("url", [f"https://github.com/{REPO}/actions/runs/501", "https://evil.example/phish",
                                 f"https://github.com/{REPO}/actions/runs/999",
                                 f"https://github.com/{REPO}/actions/runs/501) ![x](https://e.example/p.png",
                                 "javascript:alert(1)//https://github.com/o/r/actions/runs/501"])
def test_a_remembered_run_keeps_its_link_only_to_its_own_page_on_github(ci_report, url):
    comment = render_ci_comment(merge_earlier_runs(ci_report(), state_comment([remembered(run_url=url)])))
    if url == f"https://github.com/{REPO}/actions/runs/501":
        assert f"- [trunk run 501]({url}) on `deadbeef00`" in comment
    else:
        assert url not in comment and "- trunk run 501 on `deadbeef00`" in comment


def test_forged_words_in_the_remembered_state_stay_text(ci_report):
    forged = remembered(workflow="@octo-org/team", head_sha="`x` @octo-org/team",
                        jobs=[{"name": "job <img src=x>", "url": "u", "category": "graph_break",
                               "title": "PWNED @octo-org/maintainers ![x](https://evil.example/p.png) <!-- x -->",
                               "test": "t` @octo-org/team"}])
    comment = render_ci_comment(merge_earlier_runs(ci_report(), state_comment([forged])))
    earlier = comment[comment.index("Earlier failed runs"):comment.index("</details>", comment.index("Earlier"))]
    assert MENTION.search(earlier) is None and "![" not in earlier and "<img" not in earlier
    assert earlier.count("<!--") == 0


def test_a_remembered_job_without_the_fields_a_comment_shows_forgets_the_state():
    """Rendered, the missing title would stop the whole comment (the template's undefined is strict)."""
    assert decode_state(state_comment([remembered(jobs=[{"name": "job"}])])) == []


def test_a_log_line_carrying_a_marker_of_ours_does_not_reach_the_comment(ci_report):
    """The App tells its comments apart by their markers: a quoted log line that kept one would make
    the CI comment pass for the report comment (which `classify` would then overwrite)."""
    log = (FIXTURES / "inductor_cpp_compile_error.log").read_bytes().replace(
        b"CppCompileError: C++ compile error", b"CppCompileError: C++ compile error <!-- pt2-triage:report -->")
    comment = render_ci_comment(ci_report(log))
    assert "pt2-triage:report" in comment.replace("\u200b", "")  # it is quoted, broken
    assert re.findall(r"<!--\s*pt2-triage:[\w-]+", comment) == ["<!-- pt2-triage:ci-failure", "<!-- pt2-triage:ci-state"]
