"""`pt2-triage classify` and `pt2-triage eval` as a user runs them."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

from bot.cli.main import main
from tests import paths

FIXTURES = paths.FIXTURES


def test_classify_prints_a_readable_verdict(capsys):
    assert main(["classify", str(FIXTURES / "fullgraph_data_dependent_branch.log")]) == 0
    out = capsys.readouterr().out
    assert re.match(r"graph_break \(\d\d% confident\) - Graph break", out)
    assert "graph break GB0170: Data-dependent branching" in out
    assert "TORCH_LOGS=graph_breaks python repro.py" in out
    assert "regression test goes in: test/dynamo/test_repros.py" in out


def test_classify_json_has_the_documented_fields(capsys):
    assert main(["classify", "--json", str(FIXTURES / "recompile_limit.log")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"category", "confidence", "signature", "evidence", "graph_break_id", "diagnostics"} <= set(data)
    assert data["category"] == "recompilation"
    assert data["diagnostics"]["env"]["TORCH_LOGS"] == "recompiles,recompiles_verbose,guards"
    assert all(set(item) == {"line", "text"} for item in data["evidence"])


def test_classify_reads_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"torch._dynamo.exc.InternalTorchDynamoError: KeyError: 1\n")))
    assert main(["classify", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["category"] == "dynamo_internal_error"


def test_classify_empty_file(tmp_path, capsys):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert main(["classify", "--json", str(empty)]) == 0
    assert json.loads(capsys.readouterr().out)["category"] == "not_pt2"


def test_missing_file_is_a_one_line_error(capsys):
    assert main(["classify", "/no/such/file.log"]) == 2
    err = capsys.readouterr().err
    assert err == "pt2-triage: /no/such/file.log: no such file (give a path, or - for standard input)\n"


def test_eval_reports_accuracy_table_and_json_last_line(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(case) for case in [
        {"id": "gb", "category": "graph_break", "body": (FIXTURES / "fullgraph_data_dependent_branch.log").read_text()},
        {"id": "ok", "category": "not_pt2", "body": "all tests passed"},
        {"id": "wrong", "category": "accuracy", "body": "torch._dynamo.exc.Unsupported: Data-dependent branching"},
    ]) + "\n")
    assert main(["eval", str(corpus), "--json"]) == 0
    captured = capsys.readouterr()
    last = json.loads(captured.out.strip().splitlines()[-1])
    assert last["n"] == 3 and abs(last["accuracy"] - 2 / 3) < 1e-3
    assert last["per_category"]["graph_break"]["precision"] == 0.5
    assert "accuracy -> graph_break" in captured.err


def test_eval_rejects_a_malformed_corpus_line(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"body": "x", "category": "graph_break"}\n{"body": 1}\n')
    assert main(["eval", str(corpus)]) == 2
    assert "corpus.jsonl:2: each line needs a string `body` and `category`" in capsys.readouterr().err


def test_bad_rules_directory_is_reported_not_a_traceback(tmp_path, capsys):
    (tmp_path / "categories.yaml").write_text("categories: {}\n")
    (tmp_path / "patterns.yaml").write_text("patterns: []\n")
    assert main(["classify", "--rules", str(tmp_path), str(FIXTURES / "recompile_limit.log")]) == 2
    assert "exactly one category must say `pt2: false`" in capsys.readouterr().err


def test_console_script_is_installed():
    pt2_triage = Path(sys.executable).with_name("pt2-triage")
    result = subprocess.run([str(pt2_triage), "classify", "--json", str(FIXTURES / "inductor_runtime_error.log")],
                            capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["category"] == "runtime_crash"
