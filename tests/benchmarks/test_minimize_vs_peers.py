"""The minimize benchmark: its cases, its verdict on the issue's targets, and one real smoke run."""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
spec = importlib.util.spec_from_file_location("minimize_vs_peers", BENCH / "minimize_vs_peers.py")
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # dataclasses look their module up there
spec.loader.exec_module(bench)


def outcome(reducer, tokens, wall_s, verified=True):
    return bench.Outcome(reducer, tokens, lines=1, runs=1, wall_s=wall_s, budget_hit=False, verified=verified)


def test_every_case_is_a_sizeable_script_with_a_category_header():
    cases = sorted((BENCH / "minimize_cases").glob("*.py"))
    assert len(cases) >= 8
    categories = set()
    for path in cases:
        source = path.read_text()
        ast.parse(source)
        assert 25 <= len(source.splitlines()) <= 75, path.name
        header = [line for line in source.splitlines() if line.startswith("# category: ")]
        assert len(header) == 1, path.name
        categories.add(header[0].split(": ", 1)[1])
    assert len(categories) >= 8


def test_size_target_compares_with_the_best_verified_peer_per_case():
    results = {
        "a": {"ours": outcome("ours", 20, 10), "pysource-minimize": outcome("pysource-minimize", 25, 100),
              "shrinkray": outcome("shrinkray", 5, 100, verified=False)},  # an unverified result does not count
        "b": {"ours": outcome("ours", 30, 30), "pysource-minimize": outcome("pysource-minimize", 29, 80),
              "shrinkray": outcome("shrinkray", 40, 60)},
    }
    verdict = bench.judge(results)
    assert {k: verdict["per_case"]["a"][k] for k in ("ours_tokens", "best_peer_tokens", "size_ok")} == \
        {"ours_tokens": 20, "best_peer_tokens": 25, "size_ok": True}
    assert verdict["per_case"]["b"]["size_ok"] is False
    assert verdict["size_ok"] is False


def test_wall_target_is_half_the_best_peers_median():
    results = {name: {"ours": outcome("ours", 1, ours), "pysource-minimize": outcome("pysource-minimize", 2, peer),
                      "shrinkray": outcome("shrinkray", 2, 2 * peer)}
               for name, ours, peer in (("a", 10, 30), ("b", 20, 40), ("c", 90, 50))}
    verdict = bench.judge(results)
    assert verdict["our_median_wall_s"] == 20 and verdict["peer_median_wall_s"]["pysource-minimize"] == 40
    assert verdict["wall_ok"] is True  # 20 <= 0.5 * 40
    results["b"]["ours"].wall_s = 21
    assert bench.judge(results)["wall_ok"] is False


def test_time_to_reach_the_best_peers_size_comes_from_the_progress_trace():
    ours = outcome("ours", 10, 90)
    ours.progress = [(5.0, 200), (12.5, 40), (30.0, 25), (80.0, 10)]
    verdict = bench.judge({"a": {"ours": ours, "shrinkray": outcome("shrinkray", 30, 120)}})
    assert verdict["per_case"]["a"]["ours_reached_best_peer_s"] == 30.0  # first candidate with <= 30 tokens
    assert verdict["ours_median_s_to_best_peer_size"] == 30.0


def test_runs_compare_what_each_took_to_hold_the_best_peers_final_size():
    ours = outcome("ours", 10, 90)
    ours.runs, ours.run_progress = 300, [(4, 200), (20, 40), (35, 30), (290, 10)]  # went on to smaller results
    peer = outcome("shrinkray", 30, 120)
    peer.runs, peer.run_progress = 150, [(10, 100), (60, 30)]  # its last 90 runs found nothing smaller
    case = bench.judge({"a": {"ours": ours, "shrinkray": peer}})["per_case"]["a"]
    assert (case["runs_ok"], case["ours_reached_best_peer_runs"], case["best_peer_reached_runs"]) == (False, 35, 60)
    assert case["reach_runs_ok"] is True
    ours.run_progress = [(4, 200), (70, 30)]
    assert bench.judge({"a": {"ours": ours, "shrinkray": peer}})["reach_runs_ok"] is False


def test_earlier_outcomes_round_trip_through_the_json_output(tmp_path):
    ours = outcome("ours", 10, 90)
    ours.progress = [(1.0, 50)]
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps({"cases": {"a": {"ours": bench.asdict(ours)}}}))
    assert bench.earlier_outcomes(str(path)) == {"a": {"ours": ours}}


def test_an_unverified_result_of_ours_fails_the_size_target():
    results = {"a": {"ours": outcome("ours", 1, 1, verified=False), "shrinkray": outcome("shrinkray", 9, 9)}}
    assert bench.judge(results)["size_ok"] is False


def test_unknown_case_names_are_refused():
    with pytest.raises(SystemExit, match="no such case"):
        bench.main(["--only", "no_such_case"])


@pytest.mark.slow
def test_quick_run_of_one_case_reduces_and_verifies(tmp_path):
    peers = [name for name, module in (("pysource-minimize", "pysource_minimize"), ("shrinkray", "shrinkray"))
             if importlib.util.find_spec(module)]
    # 40 s: --budget bounds the whole minimize stage, its first runs and the confirming reserve included
    report = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(BENCH / "minimize_vs_peers.py"), "--quick", "--only", "export_dim_specialized",
                    "--budget", "40", "--reducers", ",".join(["ours", *peers]), "--json", str(report)],
                   check=True, timeout=300)
    data = json.loads(report.read_text())
    case = data["cases"]["export_dim_specialized"]
    assert set(case) == {"ours", *peers}
    ours = case["ours"]
    assert ours["verified"] and ours["tokens"] < bench.count_tokens((BENCH / "minimize_cases" / "export_dim_specialized.py").read_text())
    assert all(case[peer]["verified"] for peer in peers)  # a peer's best-so-far is still a real repro


@pytest.mark.slow
def test_the_predicate_refuses_without_a_run_a_candidate_that_is_another_kind_of_repro():
    """Every reducer is held to what ours keeps (runners/reduce/shape.py): a peer that passes a
    bare number where the model took a tensor gets "no" without a run, like ours."""
    sys.path.insert(0, str(BENCH))
    from predicate_server import PredicateServer
    source = ("import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x\n\n\n"
              "torch.compile(f, fullgraph=True)(torch.ones(3))\n")
    with PredicateServer(source, jobs=1) as server:
        server.begin("test", 120)
        assert not server.judge(source.replace("torch.ones(3)", "3"))
        assert server.judge(source.replace("torch.ones(3)", "torch.ones(1)"))
        session = server.end()
    assert (session.no_run, session.runs) == (1, 1)
