"""GitHub Actions: workflow runs, their jobs and logs, artifacts, and workflow_dispatch."""
from __future__ import annotations

from urllib.parse import quote

from bot.app.github.records import Artifact, Download, WorkflowJob, WorkflowRun
from bot.app.github.transport import RestClient, parse_repo

MAX_LOG_BYTES = 64 << 20  # a job log larger than this keeps its tail: the error is at the end
MAX_ARTIFACT_BYTES = 256 << 20


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
        callers pass their own job id in the inputs and match the run by it later."""
        self.request("POST", f"/repos/{parse_repo(repo)}/actions/workflows/{quote(workflow_file, safe='')}/dispatches",
                     json={"ref": ref, "inputs": {k: str(v) for k, v in inputs.items()}})
