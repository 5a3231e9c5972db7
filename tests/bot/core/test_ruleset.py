"""The triage table: what the bundled rules promise, and how a broken rules file is reported."""
from __future__ import annotations

import copy
import re

import pytest
import yaml

from bot.core.ruleset import RulesError, load_ruleset, parse_ruleset
from tests import paths

# The categories as the corpus, the templates and the labels know them (bot/rules/categories.yaml).
CATEGORY_IDS = ("graph_break", "backend_compiler_failed", "recompilation", "accuracy", "dynamo_internal_error",
                "runtime_crash", "triton_kernel_bug", "export_failure", "aoti_failure", "aot_autograd_failure",
                "dynamic_shapes", "performance", "not_pt2", "unknown")


RULES = paths.RULES


@pytest.fixture
def docs():
    return (yaml.safe_load((RULES / "categories.yaml").read_text()),
            yaml.safe_load((RULES / "patterns.yaml").read_text()))


def test_every_category_is_defined_with_its_table_row(ruleset):
    assert set(ruleset.categories) == set(CATEGORY_IDS)
    for category in ruleset.categories.values():
        assert category.title and category.summary and category.next_steps
        assert "test/dynamo/test_misc.py" not in category.test_files


@pytest.mark.parametrize("category, variable, value", [
    ("graph_break", "TORCH_LOGS", "graph_breaks"),
    ("recompilation", "TORCH_LOGS", "recompiles,recompiles_verbose,guards"),
    ("backend_compiler_failed", "TORCHDYNAMO_REPRO_LEVEL", "2"),
    ("backend_compiler_failed", "TORCHDYNAMO_REPRO_AFTER", "aot"),
    ("accuracy", "TORCHDYNAMO_REPRO_LEVEL", "4"),
    ("runtime_crash", "CUDA_LAUNCH_BLOCKING", "1"),
    ("runtime_crash", "PYTORCH_NO_CUDA_MEMORY_CACHING", "1"),
    ("runtime_crash", "TORCHINDUCTOR_NAN_ASSERTS", "1"),
    ("triton_kernel_bug", "TORCH_LOGS", "output_code,schedule"),
    ("aoti_failure", "AOTI_RUNTIME_CHECK_INPUTS", "1"),
    ("aot_autograd_failure", "TORCH_LOGS", "aot,aot_graphs,aot_joint_graph"),
])
def test_diagnostics_follow_the_guides(ruleset, category, variable, value):
    assert ruleset.categories[category].diagnostics.env[variable] == value


def test_pt2_categories_have_topic_specific_test_files_and_labels(ruleset):
    for cid in CATEGORY_IDS:
        if cid != "not_pt2":
            assert ruleset.categories[cid].test_files, cid
            assert "oncall: pt2" in ruleset.categories[cid].labels, cid
    assert ruleset.categories["export_failure"].test_files[0] == "test/export/test_export.py"
    assert ruleset.categories["recompilation"].test_files[0] == "test/dynamo/test_recompiles.py"


def test_patterns_are_ranked_by_priority_then_file_order(ruleset):
    keys = [(-p.priority, p.order) for p in ruleset.patterns]
    assert keys == sorted(keys)
    assert [p.name for p in ruleset.patterns[:2]] == ["toolchain_missing", "recompile_limit_hit"]


def test_catch_all_rules_are_evidence_and_context_rules_refile_by_entry_point(ruleset):
    by_name = {p.name: p for p in ruleset.patterns}
    assert not by_name["error_outside_compiler"].decisive  # a pasted traceback may be cut before the compiler
    assert by_name["unsupported_exception"].decisive and not by_name["graph_break_log"].decisive
    assert ("dynamic_shapes", "entry:export", "export_failure") in {
        (w, r.feature, r.category) for r in ruleset.context for w in r.when}


@pytest.mark.parametrize("mutate, message", [
    (lambda c, p: c["categories"]["not_pt2"].pop("pt2"), "exactly one category must say `pt2: false` (found: none)"),
    (lambda c, p: c["categories"]["graph_break"].__setitem__("fallback", True), "`fallback: true` (found: graph_break, unknown)"),
    (lambda c, p: c["categories"].__setitem__("Bogus-Id", c["categories"]["accuracy"]), "category 'Bogus-Id': an id is lower_snake_case"),
    (lambda c, p: c["categories"]["accuracy"]["differential"].pop("judge"), "needs `probe` (switches), `prose` (a feature) and `judge`"),
    (lambda c, p: c["categories"]["accuracy"].pop("labels"), "category 'accuracy': missing field 'labels'"),
    (lambda c, p: c["categories"]["graph_break"]["test_files"].append("test/dynamo/test_misc.py"), "test_misc.py is oversized"),
    (lambda c, p: c["categories"]["accuracy"].__setitem__("pt2", "yes"), "category 'accuracy'.pt2: must be true or false"),
    (lambda c, p: c["categories"]["recompilation"].__setitem__("minimize_keeps", "(?=x)"),
     "category 'recompilation'.minimize_keeps: not an RE2 expression"),
    (lambda c, p: p["patterns"][0].__setitem__("regex", "(?<=lookbehind)x"), "pattern 'aoti_entry_point': regex does not compile under RE2"),
    (lambda c, p: p["patterns"][1].__setitem__("category", "nope"), "pattern 'aoti_api_in_error': category 'nope' is not defined"),
    (lambda c, p: p["patterns"][1].__setitem__("in", "everywhere"), "`in` must be one of"),
    (lambda c, p: p["patterns"][1].__setitem__("priority", 1000), "priority must be an integer 0-100"),
    (lambda c, p: p["patterns"][1].__setitem__("requires", ["sunny"]), "unknown fact 'sunny'"),
    (lambda c, p: p["patterns"][1].pop("regex"), "pattern 'aoti_api_in_error': missing field 'regex'"),
    (lambda c, p: p["patterns"].append(dict(p["patterns"][0])), "duplicate pattern names: aoti_entry_point"),
])
def test_a_broken_rules_file_names_the_bad_entry(docs, mutate, message):
    categories, patterns = copy.deepcopy(docs)
    mutate(categories, patterns)
    with pytest.raises(RulesError, match=re.escape(message)):
        parse_ruleset(categories, patterns)


def test_a_minimized_recompile_keeps_a_failed_guard(ruleset):
    """`recompile_limit = 0` hits the limit at the first compile: the same error, but no guard failed,
    so the repro no longer shows why the user's code recompiles."""
    recompilation = ruleset.categories["recompilation"]
    original = "torch._dynamo hit config.recompile_limit (2)\n   last reason: 0/1: temperature == 2.0"
    assert recompilation.keeps_cause(original, "hit config.recompile_limit (1)\n   last reason: 0/0: t == 0")
    assert not recompilation.keeps_cause(original, "hit config.recompile_limit (0)\n   last reason: None")
    assert recompilation.keeps_cause("FailOnRecompileLimitHit", "last reason: None")  # nothing shown to keep
    assert ruleset.categories["graph_break"].keeps_cause(original, "")  # no such fact for other categories


def test_invalid_yaml_is_a_clear_error(tmp_path):
    (tmp_path / "categories.yaml").write_text("categories: [unclosed")
    (tmp_path / "patterns.yaml").write_text("patterns: []")
    with pytest.raises(RulesError, match="categories.yaml: not valid YAML"):
        load_ruleset(tmp_path)


def test_every_table_is_read_once_and_checked_against_the_categories(tmp_path):
    import shutil
    from importlib import resources

    for name in ("categories.yaml", "patterns.yaml", "features.yaml", "regression.yaml", "test_files.yaml",
                 "excerpts.yaml", "reproduction.yaml", "ladder.yaml", "disposition.yaml"):
        shutil.copy(resources.files("bot.rules") / name, tmp_path / name)
    load_ruleset(tmp_path, check_all=True)  # the bundled tables are consistent
    text = (tmp_path / "regression.yaml").read_text()
    (tmp_path / "regression.yaml").write_text(text + "\n  bogus_category: {assertion: no_error, base: torch._dynamo.test_case, name: x}\n")
    ruleset = load_ruleset(tmp_path)  # categories and patterns still load: the other tables are read on use
    with pytest.raises(RulesError, match="regression.yaml: bogus_category: unknown category"):
        ruleset.regression_plans
    with pytest.raises(RulesError, match="regression.yaml: bogus_category"):
        load_ruleset(tmp_path, check_all=True)


def test_a_minimized_recompile_keeps_the_kind_of_tensor_guard_that_failed(ruleset):
    """fresh_issues_8's reranker recompiled on a stride-0 `expand`; a candidate that recompiled on a
    size going 1 -> 0 raised the same RecompileError for another reason."""
    recompilation = ruleset.categories["recompilation"]
    failed = ("torch._dynamo.exc.RecompileError: Recompiling function forward in /sandbox/repro.py:33\n"
              "    triggered by the following guard failure(s):\n    - 0/0: tensor 'q_ids' {} at index 0. expected 12, actual 0\n")
    stride, size = failed.format("stride mismatch"), failed.format("size mismatch")
    assert recompilation.keeps_cause(stride, stride.replace("q_ids", "x"))
    assert not recompilation.keeps_cause(stride, size)
    value_guard = size.replace("tensor 'q_ids' size mismatch at index 0. expected 12, actual 0", "L['self'].n == 3")
    assert recompilation.keeps_cause(value_guard, size)  # a guard of no named kind: only that one failed is kept
