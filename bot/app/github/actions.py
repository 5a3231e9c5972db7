"""GitHub Actions: workflow runs, their jobs and logs, artifacts, and workflow_dispatch."""
from __future__ import annotations

from urllib.parse import quote

from bot.app.github.records import Artifact, Download, WorkflowJob, WorkflowRun
from bot.app.github.transport import RestClient, parse_repo

MAX_LOG_BYTES = 64 << 20  # a job log larger than this keeps its tail: the error is at the end
MAX_ARTIFACT_BYTES = 256 << 20
JOB_ID_INPUT = "job-id"  # the dispatch input the runner workflow puts in its run's title (run-name)
# GitHub starts a dispatched run just after answering, and lists it a moment later: after a failed
# dispatch, wait this long before looking for the run, so a run on its way is not dispatched again
DISPATCH_SETTLE_S = 10.0


class ActionsApi(RestClient):
    """Runs, jobs, logs, artifacts, dispatch (part of `GitHub`)."""

    def workflow_run(self, repo: str, run_id: int) -> WorkflowRun:
        return WorkflowRun.from_api(self.json("GET", f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}"))

    def run_jobs(self, repo: str, run_id: int) -> list[WorkflowJob]:
        """The latest attempt's jobs of a run."""
        jobs = []
        for item in self.paginate(f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}/jobs",
                                  {"filter": "latest"}, key="jobs"):
            failed = tuple(s["name"] for s in item.get("steps") or () if s.get("conclusion") == "failure")
            jobs.append(WorkflowJob(item["id"], item["name"], item.get("conclusion"), item.get("html_url") or "",
                            item["run_id"], failed))
        return jobs

    def job_log(self, repo: str, job_id: int, max_bytes: int = MAX_LOG_BYTES) -> Download:
        """A job's plain-text log (GitHub redirects to storage; requests drops our token on the way)."""
        return self.download(f"/repos/{parse_repo(repo)}/actions/jobs/{int(job_id)}/logs", max_bytes)

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        return [Artifact(a["id"], a["name"], a.get("size_in_bytes", 0), bool(a.get("expired")))
                for a in self.paginate(f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}/artifacts",
                                       key="artifacts")]

    def artifact_zip(self, repo: str, artifact_id: int, max_bytes: int = MAX_ARTIFACT_BYTES) -> bytes:
        return self.download(f"/repos/{parse_repo(repo)}/actions/artifacts/{int(artifact_id)}/zip",
                             max_bytes, keep="refuse").content

    def dispatch_workflow(self, repo: str, workflow_file: str, ref: str, inputs: dict[str, str]) -> None:
        """workflow_dispatch: GitHub answers 204 and starts a run; it does not say which one, so
        callers pass their own job id in the inputs (`job-id`, which the runner workflow's run-name
        carries) and match the run by it later.

        Sent once per job id (`create_once`): before each send, the workflow's recent dispatched runs
        are searched for one whose title carries the id, so a 5xx that came after GitHub started the
        run, or a job retried after one, starts no second run. A run GitHub has not listed yet
        DISPATCH_SETTLE_S after the failure is taken as not started. Without a job id a failure is
        not re-sent here: it goes to the caller.
        """
        path = f"/repos/{parse_repo(repo)}/actions/workflows/{quote(workflow_file, safe='')}/dispatches"
        body = {"ref": ref, "inputs": {k: str(v) for k, v in inputs.items()}}

        def send() -> bool:
            self.request("POST", path, json=body, retry_server_errors=False)
            return True

        job_id = inputs.get(JOB_ID_INPUT)
        if not job_id:
            send()
            return
        self.create_once(send, lambda: self.dispatched_run(repo, workflow_file, str(job_id)), DISPATCH_SETTLE_S)

    def dispatched_run(self, repo: str, workflow_file: str, job_id: str) -> WorkflowRun | None:
        """The run a dispatch with this job id started, among the workflow's latest dispatched runs
        (one page, newest first: a dispatch being checked is recent), or None."""
        data = self.json("GET", f"/repos/{parse_repo(repo)}/actions/workflows/{quote(workflow_file, safe='')}/runs",
                         params={"event": "workflow_dispatch", "per_page": 100})
        for item in data.get("workflow_runs") or ():
            run = WorkflowRun.from_api(item)
            if job_id in run.display_title.split():
                return run
        return None
