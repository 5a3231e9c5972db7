"""A rerun after a fix: the same comment celebrates once the repro runs clean and the test passes."""
from __future__ import annotations

import io
import json
import zipfile

from bot.pipeline.comment import CELEBRATIONS

from .conftest import FIXTURES, drain, webhook_payload
from .test_flow import finish_runner, runner_completed


def fixed_report_zip(issue_number: int = 12) -> bytes:
    report = json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))
    report["issue_number"] = issue_number
    report["reproduction"].update(status="not_reproduced", reproduced=False, runs_reproduced=0,
                                  summary="Not reproduced on cpu with torch 2.14.0+cpu (0/1 runs).")
    report["regression_test"].update(verification="passes", verification_note="the test passes")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report.json", json.dumps(report))
    return buffer.getvalue()


def test_a_rerun_that_no_longer_fails_celebrates_in_the_same_comment(app, deliver, fake):
    fake.permissions["maintainer"] = "maintain"
    deliver("issues_labeled")
    drain(app)
    finish_runner(fake, deliver, app, fake.dispatches[0]["inputs"]["job-id"], run_id=1)
    [first] = fake.bot_comments_on(12)
    assert not any(line in first["body"] for line in CELEBRATIONS)

    rerun = webhook_payload("issue_comment_created")
    rerun["comment"]["body"] = "@pt2-triage rerun"
    deliver(rerun, "issue_comment")
    drain(app)
    job_key = fake.dispatches[1]["inputs"]["job-id"]
    payload = runner_completed(job_key, run_id=2)
    fake.add_run(payload["workflow_run"], artifacts={f"pt2-triage-report-{job_key}": fixed_report_zip()})
    assert deliver(payload, "workflow_run").status_code == 202
    drain(app)

    [final] = fake.bot_comments_on(12)  # still one comment
    assert sum(line in final["body"] for line in CELEBRATIONS) == 1
    assert "not reproduced" in final["body"]
