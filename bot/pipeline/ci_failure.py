"""Failed CI jobs -> PT2 findings (pure: job records and log bytes in, a report out).

For each failed job of a workflow run: classify its log with the streaming scan (a 64 MB log is
never decoded whole), and say what a PR author needs: is it a compiler failure at all, which
category, which test failed, the command that reproduces it locally (PyTorch's own "To execute
this test" line when the log has one, else a pytest node id), with the category's diagnostics,
and the log lines around the error.

The comment on the PR is rendered from `CiFailureReport` and carries a compact, hidden summary of
earlier runs (`CI_STATE_*`), so one comment accumulates failures without any server-side state:
the same code serves the App and the stateless `pt2-triage ci-failure` Action step.
"""
from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from bot.core.classify import Classifier
from bot.core.failures import Failure, distinct_failures
from bot.core.logtext import clean_line, decode
from bot.core.markdown import cell_code, code_span, details, fence, inert, inert_line
from bot.core.records import Evidence
from bot.core.render import env_prefix, render

CI_MARKER = "<!-- pt2-triage:ci-failure -->"
CI_STATE_OPEN = "<!-- pt2-triage:ci-state "
CI_STATE_CLOSE = " -->"
FAILED_CONCLUSIONS = ("failure", "timed_out")
# PyTorch's test harness prints the exact command after each failure:
#   To execute this test, run the following from the base repo dir:
#       PYTORCH_TEST_WITH_DYNAMO=1 python test/dynamo/test_misc.py MiscTests.test_x
EXECUTE_HINT_RE = re.compile(rb"To execute this test, run the following from the base repo dir:[^\n]*\n([^\n]+)")
TAIL_FOR_HINTS = 4 << 20
EXCERPT_BEFORE, EXCERPT_AFTER, EXCERPT_MAX_CHARS = 25, 8, 6000
MAX_REMEMBERED_RUNS = 10
ACTIONS_RUN_URL = re.compile(r"https://github\.com/[A-Za-z0-9-]+/[A-Za-z0-9._-]+/actions/runs/(\d+)")


@dataclass(frozen=True)
class JobLog:
    """One failed job and its log as downloaded (possibly only its tail)."""

    job_id: int
    name: str
    html_url: str
    log: bytes
    failed_steps: tuple[str, ...] = ()
    dropped_bytes: int = 0


@dataclass(frozen=True)
class JobFinding:
    job_id: int
    job_name: str
    job_url: str
    category: str
    title: str
    confidence: float
    signature: str
    is_pt2: bool
    exception_type: str | None = None
    failed_steps: tuple[str, ...] = ()
    failing_tests: tuple[str, ...] = ()
    repro_command: str | None = None
    error_line: str | None = None
    excerpt: str = ""
    log_dropped_bytes: int = 0
    failures: tuple[Failure, ...] = ()  # each distinct failure of the log, with its test and category


@dataclass(frozen=True)
class RunSummary:
    """What a later comment still shows of an earlier run (no excerpts: they are in that run's logs)."""

    run_id: int
    run_url: str
    workflow: str
    head_sha: str
    jobs: tuple[dict, ...]  # {name, url, category, title, test}


@dataclass(frozen=True)
class CiFailureReport:
    repo: str
    run_id: int
    run_url: str
    workflow: str
    head_sha: str
    pull_requests: tuple[int, ...]
    findings: tuple[JobFinding, ...]
    earlier_runs: tuple[RunSummary, ...] = field(default=())

    @property
    def pt2_findings(self) -> tuple[JobFinding, ...]:
        return tuple(f for f in self.findings if f.is_pt2)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict) -> "CiFailureReport":
        return cls(**{**data, "pull_requests": tuple(data["pull_requests"]),
                      "findings": tuple(JobFinding(**{**f, "failed_steps": tuple(f["failed_steps"]),
                                                      "failing_tests": tuple(f["failing_tests"]),
                                                      "failures": tuple(Failure(**x) for x in f.get("failures", ()))})
                                        for f in data["findings"]),
                      "earlier_runs": tuple(RunSummary(**{**r, "jobs": tuple(r["jobs"])})
                                            for r in data.get("earlier_runs", ()))})

    def summary(self) -> RunSummary:
        return RunSummary(self.run_id, self.run_url, self.workflow, self.head_sha,
                          tuple({"name": f.job_name, "url": f.job_url, "category": f.category, "title": f.title,
                                 "test": f.failing_tests[0] if f.failing_tests else None} for f in self.pt2_findings))


def analyze_job(job: JobLog, classifier: Classifier) -> JobFinding:
    """Classify one failed job's log and pull out what reproduces it."""
    log = job.log
    classification = classifier.classify(log)
    category = classifier.ruleset.categories[classification.category]
    scan = classifier.scanner.scan(log)
    failing_tests = tuple(scan.failing_tests[:20])
    hints = execute_hints(log)
    is_pt2 = classification.is_pt2
    command = repro_command(hints, failing_tests, dict(category.diagnostics.env) if is_pt2 else {})
    lead = classification.evidence[0] if classification.evidence else None
    return JobFinding(
        job_id=job.job_id, job_name=job.name, job_url=job.html_url, category=classification.category,
        title=category.title, confidence=classification.confidence, signature=classification.signature,
        is_pt2=is_pt2, exception_type=classification.exception_type, failed_steps=job.failed_steps,
        failing_tests=failing_tests, repro_command=command, error_line=lead.text if lead else None,
        excerpt=excerpt(log, lead) if lead else _tail_lines(log, 20), log_dropped_bytes=job.dropped_bytes,
        failures=distinct_failures(log, classifier))


def analyze_run(repo: str, run_id: int, run_url: str, workflow: str, head_sha: str, pull_requests: tuple[int, ...],
                jobs: Iterable[JobLog], classifier: Classifier) -> CiFailureReport:
    """The run's report. `jobs` may be a generator: each log is analyzed and let go before the next."""
    return CiFailureReport(repo=repo, run_id=run_id, run_url=run_url, workflow=workflow, head_sha=head_sha,
                           pull_requests=tuple(pull_requests),
                           findings=tuple(analyze_job(job, classifier) for job in jobs))


def execute_hints(log: bytes) -> list[str]:
    """PyTorch's "To execute this test" commands from the end of a log, cleaned, deduplicated."""
    tail = bytes(log[-TAIL_FOR_HINTS:])
    found = []
    for match in EXECUTE_HINT_RE.finditer(tail):
        command = clean_line(decode(match.group(1))).strip()
        if command and command not in found:
            found.append(command)
    return found


def repro_command(hints: list[str], failing_tests: tuple[str, ...], diagnostics_env: dict[str, str]) -> str | None:
    """The command a PR author runs from the repository root, with the category's diagnostics on."""
    if hints:
        return env_prefix(diagnostics_env) + hints[0]
    if failing_tests:
        return env_prefix(diagnostics_env) + f"python -m pytest -v {shell_word(failing_tests[0])}"
    return None


def shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def excerpt(log: bytes, lead: Evidence) -> str:
    """The cleaned log lines around the deciding line: its traceback above it, a few lines after."""
    first = max(lead.line - EXCERPT_BEFORE, 1)
    lines = _lines_between(log, first, lead.line + EXCERPT_AFTER)
    text = "\n".join(clean_line(line) for line in lines)
    return text[-EXCERPT_MAX_CHARS:]


def _lines_between(log: bytes, first: int, last: int) -> list[str]:
    """Lines first..last (1-based) of a byte buffer without decoding the rest of it."""
    position, line_no = 0, 1
    while line_no < first:
        newline = log.find(b"\n", position)
        if newline < 0:
            return []
        position, line_no = newline + 1, line_no + 1
    end = position
    for _ in range(last - first + 1):
        newline = log.find(b"\n", end)
        if newline < 0:
            end = len(log)
            break
        end = newline + 1
    return decode(log[position:end]).rstrip("\n").split("\n")


def _tail_lines(log: bytes, count: int) -> str:
    tail = decode(log[-16384:]).rstrip("\n").split("\n")[-count:]
    return "\n".join(clean_line(line) for line in tail)


# ---------------------------------------------------------------- the PR comment

def render_ci_comment(report: CiFailureReport, bot_name: str = "pt2-triage") -> str:
    """The one CI comment of a PR: this run in full, earlier runs as one line per job, hidden state."""
    body = render("ci_failure.md.j2", report=report, marker=CI_MARKER, md=_MARKDOWN_HELPERS, bot_name=bot_name)
    return body.rstrip("\n") + "\n" + encode_state(report) + "\n"


def merge_earlier_runs(report: CiFailureReport, previous_comment: str | None) -> CiFailureReport:
    """Carry the earlier runs of the existing comment forward (newest first, this run excluded)."""
    earlier = [r for r in decode_state(previous_comment or "") if r.run_id != report.run_id]
    return CiFailureReport(**{**report.__dict__, "earlier_runs": tuple(earlier[:MAX_REMEMBERED_RUNS])})


def encode_state(report: CiFailureReport) -> str:
    runs = [report.summary()] + list(report.earlier_runs)
    payload = json.dumps([asdict(r) for r in runs[:MAX_REMEMBERED_RUNS]], separators=(",", ":"))
    packed = base64.b64encode(zlib.compress(payload.encode("utf-8"))).decode("ascii")
    return f"{CI_STATE_OPEN}{packed}{CI_STATE_CLOSE}"


def decode_state(comment: str) -> list[RunSummary]:
    """The runs remembered in a previous comment; anything unreadable is forgotten, not fatal.

    The state is text in a comment, which its editors (or, quoted, anyone) could have written: each
    value is made what it should be (`remembered_run`), and the template escapes the words."""
    start = comment.rfind(CI_STATE_OPEN)
    if start < 0:
        return []
    end = comment.find(CI_STATE_CLOSE, start + len(CI_STATE_OPEN))
    try:
        raw = zlib.decompress(base64.b64decode(comment[start + len(CI_STATE_OPEN):end]), bufsize=1 << 16)
        return [remembered_run(run) for run in json.loads(raw)]
    except (ValueError, KeyError, TypeError, AttributeError, zlib.error):
        return []


def remembered_run(data: dict) -> RunSummary:
    """One run of the decoded state, its values strings (and its id a number) whatever the JSON held."""
    run_id = int(data["run_id"])
    return RunSummary(run_id, run_page(str(data["run_url"]), run_id), str(data["workflow"]), str(data["head_sha"]),
                      tuple(remembered_job(job) for job in data["jobs"]))


def remembered_job(data: dict) -> dict:
    test = data.get("test")
    return {"name": str(data["name"]), "url": str(data["url"]), "category": str(data["category"]),
            "title": str(data["title"]), "test": None if test is None else str(test)}


def run_page(url: str, run_id: int) -> str:
    """`url` if it is run `run_id`'s page on GitHub, else "": the comment then names the run without
    a link, rather than link a remembered run to wherever a forged state points."""
    match = ACTIONS_RUN_URL.fullmatch(url)
    return url if match and int(match.group(1)) == run_id else ""


class _MarkdownHelpers:
    """The markdown module's helpers, handed to templates as `md`."""

    fence = staticmethod(fence)
    inert = staticmethod(inert)
    inert_line = staticmethod(inert_line)
    code_span = staticmethod(code_span)
    cell_code = staticmethod(cell_code)
    details = staticmethod(details)


_MARKDOWN_HELPERS = _MarkdownHelpers()
