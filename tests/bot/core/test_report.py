import json

import pytest

from bot.core.records import Classification, Evidence, ReporterEnvironment
from bot.core.report import MachineEnvironment, MinifierResult, Reproduction, RunRecord, SCHEMA_VERSION, TriageReport

VERDICT = Classification("graph_break", 0.93, "graph_break|Unsupported|Data-dependent branching",
                         (Evidence(12, "torch._dynamo.exc.Unsupported: Data-dependent branching"),), "GB0170",
                         "unsupported_exception", "torch._dynamo.exc.Unsupported", None)


def record(status: str = "failed") -> RunRecord:
    return RunRecord("first run", {"TORCH_LOGS": "graph_breaks"}, status, 1, None, 2.5, 1 << 20, (), True, False,
                     VERDICT, "tail")


def test_report_round_trips_through_json():
    report = TriageReport(
        classification=VERDICT, source="issue", reference="https://github.com/o/r/issues/1",
        reporter_environment=ReporterEnvironment(torch_version="2.5.1", gpu_models=("NVIDIA H100",), device_hints=("cuda",)),
        machine=MachineEnvironment(python_version="3.11.7", torch_version="2.13.0+cpu"),
        reproduction=Reproduction("reproduced", True, 1, 1, "cpu", "graph_break", "graph_break", False, "Reproduced.",
                                  (record(),), ("artifacts/run-1.log",),
                                  MinifierResult(True, "repro", True, "sig", 50.0, "ok")))
    data = json.loads(report.to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    assert TriageReport.from_dict(data) == report


def test_unknown_schema_version_is_refused():
    with pytest.raises(ValueError, match="schema version 99"):
        TriageReport.from_dict({"schema_version": 99})
