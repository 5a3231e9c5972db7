"""Bug or expected behaviour, as plain values: each rule of bot/rules/disposition.yaml on the text it reads."""
import pytest

from bot.core import disposition
from bot.core.disposition import Facts
from bot.core.ruleset import load_ruleset
from bot.core.tables import RulesError
from runners.reduce.shape import traced_source
from tests import paths

TABLE = load_ruleset().dispositions
FUNDAMENTAL = (paths.CORPUS / "recorded" / "graph_break_fullgraph.log").read_text()
DATA_DEPENDENT_IF = (paths.CORPUS / "recorded" / "dynamic_shapes_item.log").read_text()


def decide(**facts):
    return disposition.decide(TABLE, Facts(**{"state": "reproduced", "has_script": True, "failure_text": "", **facts}))


def test_a_fundamental_graph_break_is_a_limitation_with_torchs_hints():
    found = decide(failure_text=FUNDAMENTAL, layer="dynamo")
    assert (found.kind, found.rule) == ("limitation", "fundamental_graph_break")
    assert "Use `torch.cond` to express dynamic control flow." in found.hints
    assert found.workarounds == ("torch_cond",) and not found.wants_regression_test


def test_a_python_if_on_tensor_data_is_a_limitation_with_torch_cond():
    found = decide(failure_text=DATA_DEPENDENT_IF, layer="dynamo")
    assert (found.kind, found.rule, found.workarounds) == ("limitation", "data_dependent_branch", ("torch_cond",))


def test_a_data_dependent_guard_inside_torch_is_a_bug():
    text = DATA_DEPENDENT_IF.replace("Caused by: if x.sum().item() > 0:", "Caused by: torch/_refs/__init__.py:3701 in reshape")
    assert decide(failure_text=text, layer="inductor").kind == "bug"


# torch 2.13's recompile-limit failure for `self.num_updates += 1` in a compiled module's forward
# (TORCH_LOGS with guards on, as the recompilation diagnostics run it): its reason carries a hint
STATIC_INT = """W1203 00:20:46.135000 6564 torch/_dynamo/convert_frame.py:1994] [0/4] torch._dynamo hit config.recompile_limit (4)
W1203 00:20:46.135000 6564 torch/_dynamo/convert_frame.py:1994] [0/4]    last reason: 0/3: self.num_updates == 3  \
# self.num_updates += 1  # andbox/repro.py:55 in forward (HINT: torch.compile considers integer attributes of the \
nn.Module to be static. If you are observing recompilation, you might want to make this integer dynamic using \
torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor.)
  | +- TYPE_MATCH: ___check_type_id(L['self']._modules['enc'], 94371972), type=<class 'torch.nn.modules.linear.Linear'>  \
# h = self.enc(x)  # andbox/repro.py:50 in forward (HINT: type Linear)
torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit
"""


def test_a_module_int_attribute_that_recompiles_is_a_limitation_with_torchs_inline_hint():
    found = decide(failure_text=STATIC_INT, layer="dynamo")
    assert (found.kind, found.rule, found.workarounds) == ("limitation", "static_module_int", ("allow_unspec_int_on_nn_module",))
    assert len(found.hints) == 1 and found.hints[0].startswith("torch.compile considers integer attributes")
    assert "type Linear" not in found.hints  # the guard dump's type annotations are not advice


def test_a_recompile_on_a_changed_requires_grad_is_expected_not_a_static_module_int():
    """The guard dump (TORCH_LOGS=guards) tags every module int guard with the hint, whatever
    recompiled: here a parameter's requires_grad (fresh_issues_6's fine-tuning report)."""
    dump = ("V1204 04:48:31.590000 2 torch/_dynamo/guards.py:4483] [0/0] [__guards] | | +- EQUALS_MATCH: "
            "L['self']._modules['conv'].groups == 1  # return F.conv1d(  # nn/modules/conv.py:380 in _conv_forward "
            "(HINT: torch.compile considers integer attributes of the nn.Module to be static. If you are observing "
            "recompilation, you might want to make this integer dynamic using "
            "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor.)\n")
    reason = ("torch._dynamo.exc.RecompileError: Recompiling function forward in /sandbox/repro.py:40\n"
              "    triggered by the following guard failure(s):\n"
              "    - 0/0: tensor 'self._parameters['bias']' requires_grad mismatch. expected requires_grad=0.\n")
    found = decide(failure_text=dump + reason, layer="dynamo")
    assert (found.kind, found.rule, found.hints) == ("limitation", "requires_grad_recompile", ()), found
    assert decide(failure_text=dump, layer="dynamo").kind == "bug"  # nothing recompiled: no explanation


@pytest.mark.parametrize("guard", ["tensor 'q_ids' stride mismatch at index 0. expected 12, actual 0",
                                   "tensor 'x' size mismatch at index 0. expected 6, actual 7"])
def test_one_recompile_on_another_layout_is_expected(guard):
    """Dynamo guards sizes and strides (fresh_issues_8's reranker served `q.expand(6, -1)`, stride 0,
    after warming up on a contiguous batch): under error_on_recompile that one recompile fails."""
    reason = ("torch._dynamo.exc.RecompileError: Recompiling function forward in /sandbox/repro.py:33\n"
              f"    triggered by the following guard failure(s):\n    - 0/0: {guard}\n")
    found = decide(failure_text=reason, layer="dynamo")
    assert (found.kind, found.rule) == ("limitation", "layout_recompile"), found
    assert ".contiguous()" in found.reason and not found.wants_regression_test
    limit = ("torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True.\n"
             f"   last reason: 0/7: {guard}\n")
    assert decide(failure_text=limit, layer="dynamo").kind == "bug"  # automatic dynamic should have stopped it


def recompile_error(guard: str) -> str:
    """torch 2.13's RecompileError under `error_on_recompile`, with one failed guard."""
    return ("torch._dynamo.exc.RecompileError: Recompiling function forward in /sandbox/repro.py:40\n"
            "    triggered by the following guard failure(s):\n"
            f"    - 0/0: {guard}\n")


# (the failed guard, the rule that explains it, words of its advice), each from a held-out report
# whose user blamed something else
EXPECTED_RECOMPILES = [
    # fresh_issues_9's keyword spotter made its features under @torch.inference_mode() (a transpose blamed)
    ("tensor 'feats' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, "
     "AutogradCPU), actual DispatchKeySet(CPU, BackendSelect, ADInplaceOrView)", "dispatch_key_recompile", "clone()"),
    # fresh_issues_10's intent server set the float32 matmul precision after its warm-up (padding rows blamed)
    ("GLOBAL_STATE changed: allow_tf32", "global_state_recompile", "set_float32_matmul_precision"),
    # fresh_issues_7's pair scorer scores a batch against itself (nn.MultiheadAttention's `query is key` blamed)
    ('Duplicate tensors found: ["a_ids", "b_ids"]', "input_aliasing_recompile", "clone()"),
    ("Duplicate tensor found where not expected! L['b_ids'] should not alias to anything, but is aliased",
     "input_aliasing_recompile", "clone()"),  # older torch's words
]


@pytest.mark.parametrize("guard, rule, advice", EXPECTED_RECOMPILES)
def test_a_recompile_on_a_guard_dynamo_documents_is_expected(guard, rule, advice):
    found = decide(failure_text=recompile_error(guard), layer="dynamo")
    assert (found.kind, found.rule) == ("limitation", rule), found
    assert advice in found.reason and not found.wants_regression_test
    # the same words outside a failed guard's reason (a user's own log line) explain nothing
    said = f"print({guard!r})\n" + recompile_error("___check_obj_id(L['x'], 1)")
    assert decide(failure_text=said, layer="dynamo").kind == "bug"


# torch 2.13: a Python loop over a dimension marked with mark_dynamic (fresh_issues_3's recommender)
MARKED_SPECIALIZED = """torch.fx.experimental.symbolic_shapes.ConstraintViolationError: Constraints violated (L['sessions'].size()[1])! \
For more information, run with TORCH_LOGS="+dynamic".
  - You marked L['sessions'].size()[1] as dynamic but your code specialized it to be a constant (2). If you're using \
mark_dynamic, either remove it or use maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with either Dim.STATIC or Dim.AUTO.

User stack:
  File "/tmp/sandbox/repro.py", line 5, in session_recommender
    for t in range(sessions.shape[1]):
"""


def test_a_marked_dimension_the_code_specializes_is_a_limitation_with_maybe_mark_dynamic():
    found = decide(failure_text=MARKED_SPECIALIZED, layer="dynamo")
    assert (found.kind, found.rule, found.workarounds) == ("limitation", "mark_dynamic_specialized", ("maybe_mark_dynamic",))
    assert not found.wants_regression_test
    other = MARKED_SPECIALIZED.replace("You marked L['sessions'].size()[1] as dynamic but your code specialized it",
                                       "Not all values of s0 are valid")
    assert decide(failure_text=other, layer="dynamo").kind == "bug"


# torch 2.13: torch.export with `Dim("batch")` on an example of batch 1 (fresh_issues_4's classifier)
EXPORT_SIZE_ONE = """torch._dynamo.exc.UserError: Constraints violated (batch)! For more information, run with TORCH_LOGS="+dynamic".
  - You marked batch as dynamic but your code specialized it to be a constant (1). If you're using mark_dynamic, either \
remove it or use maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with either Dim.STATIC or Dim.AUTO.
Suggested fixes:
  batch = 1

The error above occurred when calling torch.export.export. If you would like to view some more information about this \
error, and get a list of all other errors that may occur in your export call, you can replace your `export()` call with \
`draft_export()`.
"""


def test_an_exported_dim_on_an_example_of_size_one_is_exports_zero_one_specialization():
    found = decide(failure_text=EXPORT_SIZE_ONE)
    assert (found.kind, found.rule, found.workarounds) == ("limitation", "export_zero_one_specialized", ())
    assert "size 2 or more" in found.reason
    six = EXPORT_SIZE_ONE.replace("a constant (1)", "a constant (6)")  # the exported code itself fixed it
    found = decide(failure_text=six)
    assert found.rule == "export_dim_specialized" and "maybe_mark_dynamic" not in found.workarounds, found
    assert "Dim.AUTO" in found.reason  # not mark_dynamic's advice: export takes Dims
    compiled = EXPORT_SIZE_ONE.split("\nThe error above")[0]  # torch.compile with mark_dynamic on a size-1 dim
    assert decide(failure_text=compiled).rule == "mark_dynamic_specialized"


def test_an_aoti_package_called_with_inputs_unlike_its_example_is_a_limitation():
    """AOTI_RUNTIME_CHECK_INPUTS=1 (the diagnostics run's) turns the silent mismatch into this error."""
    for error in ("input_handles[0]: unmatched dtype, expected: 3(at::kInt), but got: 4",
                  "input_handles[0]: unmatched stride value at 1, expected: 1024, but got: 1",
                  "expected inputs vector size to be 2, but got 1"):  # `attention_mask=None`: one input fewer
        found = decide(failure_text=f"RuntimeError: {error}\n")
        assert (found.kind, found.rule) == ("limitation", "aoti_inputs_unlike_export"), error
        assert "AOTI_RUNTIME_CHECK_INPUTS" in found.reason and not found.wants_regression_test


def test_a_hook_registered_in_a_dynamo_owned_mismatch_is_a_limitation_once_hook_guards_make_it_pass():
    script = "import torch\nfast = torch.compile(model)\nfast(x)\nmodel.register_forward_hook(hook)\n"
    facts = {"failure_text": "AssertionError: outputs differ\n", "layer": "dynamo", "script": script}
    assert disposition.to_verify(TABLE, Facts(state="reproduced", has_script=True, **facts)) == ("hook_guards",)
    assert decide(**facts).kind == "bug"  # not claimed before a run shows the switch working
    verified = decide(**facts, verified=("hook_guards",))
    assert (verified.kind, verified.rule, verified.workarounds) == ("limitation", "hook_added_after_compile", ("hook_guards",))
    assert decide(**{**facts, "layer": "inductor"}, verified=("hook_guards",)).kind == "bug"  # Dynamo's guards only


def test_size_recompiles_in_a_script_that_asked_for_static_shapes_are_a_limitation():
    """fresh_issues_12: a decoder step compiled with dynamic=False, its KV cache one longer every call."""
    text = "`step` recompiled 20 time(s) (limit 256); first failing guard: `0/0: tensor 'k_cache' size mismatch at index 2. expected 0, actual 1`\n"
    script = "import torch\nstep = torch.compile(decode, dynamic=False)\n"
    found = decide(failure_text=text, layer=None, script=script)
    assert (found.kind, found.rule) == ("limitation", "static_shapes_recompile") and "mark_dynamic" in found.reason
    assert decide(failure_text=text, layer=None, script=script.replace("dynamic=False", "dynamic=None")).kind == "bug"


def test_a_recompile_on_each_new_string_value_is_a_limitation():
    """fresh_issues_12: a language code used as a ModuleDict key recompiles per language."""
    text = ("Recompiling function forward in /sandbox/repro.py:34\n    triggered by the following guard failure(s):\n"
            "    - 0/3: lang == 'es'                         # return self._modules[key]  # container.py:555\n"
            "torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit\n")
    found = decide(failure_text=text, layer="dynamo")
    assert (found.kind, found.rule) == ("limitation", "string_value_recompile") and "string" in found.reason
    assert decide(failure_text=text.replace("lang == 'es'", "L['x'].size()[0] == 3"), layer="dynamo").kind == "bug"


CUSTOM_OP_STRIDES = ("AssertionError: expected size 16==16, stride 1==500 at dim=0; expected size 500==500, stride 16==1 "
                     "at dim=1\nError in op: torch.ops.{op}.default\n")


def test_a_custom_ops_fake_that_promises_other_strides_than_its_real_output_is_a_limitation():
    """Inductor checks a custom op's real output against its fake's promise (fresh_issues_12)."""
    found = decide(failure_text=CUSTOM_OP_STRIDES.format(op="retrieval.cosine_scores"), layer="inductor")
    assert (found.kind, found.rule) == ("limitation", "custom_op_fake_unlike_real") and "opcheck" in found.reason
    assert decide(failure_text=CUSTOM_OP_STRIDES.format(op="aten.mm"), layer="inductor").kind == "bug"  # Inductor's own


def test_weights_changed_under_freezing_are_a_limitation_once_freezing_off_makes_it_pass():
    script = ("import torch\ntorch._inductor.config.freezing = True\nserved = torch.compile(model)\nserved(x)\n"
              "model.load_state_dict(new)\nassert torch.equal(served(x), model(x))\n")
    facts = {"failure_text": "AssertionError\n", "layer": "inductor", "script": script}
    assert disposition.to_verify(TABLE, Facts(state="reproduced", has_script=True, **facts)) == ("freezing_off",)
    assert decide(**facts).kind == "bug"  # not claimed before a run shows it
    verified = decide(**facts, verified=("freezing_off",))
    assert (verified.kind, verified.rule) == ("limitation", "frozen_weights_changed")
    assert "can no longer be updated" in verified.reason and not verified.wants_regression_test
    unchanged = script.replace("model.load_state_dict(new)\n", "")  # a freezing bug with fixed weights stays a bug
    assert disposition.to_verify(TABLE, Facts(state="reproduced", has_script=True, **{**facts, "script": unchanged})) == ()


AS_STRIDED_MUTATION = (
    "RuntimeError: During torch.compile, encountered a mutation on a view chain of length 2, where view 1 was an "
    "as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly "
    "today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model "
    "code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break().\n")


def test_a_mutation_through_an_as_strided_view_is_a_limitation_torch_bans():
    found = decide(failure_text=AS_STRIDED_MUTATION, layer="aot_autograd")
    assert (found.kind, found.rule) == ("limitation", "as_strided_view_mutation")
    assert ".clone()" in found.reason and not found.wants_regression_test
    assert decide(failure_text=AS_STRIDED_MUTATION, layer="eager").kind == "user_error"


RANDOM_SCRIPT = "import torch\n\n@torch.compile\ndef noisy(x):\n    return x + torch.randn_like(x)\n"


def test_random_numbers_in_an_inductor_mismatch_are_a_limitation_only_once_eagers_make_it_pass():
    facts = Facts(state="reproduced", has_script=True, failure_text="AssertionError: loss mismatch", layer="inductor",
                  script=RANDOM_SCRIPT)
    assert disposition.to_verify(TABLE, facts) == ("fallback_random",)
    assert disposition.decide(TABLE, facts).kind == "bug"  # not seen to work: still a compiler bug
    verified = disposition.decide(TABLE, Facts(**{**facts.__dict__, "verified": ("fallback_random",)}))
    assert (verified.kind, verified.rule, verified.workarounds) == ("limitation", "inductor_random_numbers", ("fallback_random",))
    for other in ({"script": RANDOM_SCRIPT.replace("torch.randn_like(x)", "x.sin()")}, {"layer": "aot_autograd"}):
        assert disposition.to_verify(TABLE, Facts(**{**facts.__dict__, **other})) == (), other


def test_random_inputs_made_outside_the_compiled_code_ask_for_no_run():
    """Most repros make their inputs with torch.randn: only random numbers drawn in the traced code
    can differ from eager's (a GPU triage spent 10 s checking the switch on an injected bug whose
    only randn made its input)."""
    script = ("import torch\n\ndef f(x):\n    return torch.relu(x) + 1\n\n"
              "x = torch.randn(8)\ntorch.testing.assert_close(torch.compile(f)(x), f(x))\n")
    facts = Facts(state="reproduced", has_script=True, failure_text="AssertionError: Tensor-likes are not close!",
                  layer="inductor", script=script, traced=traced_source(script))
    assert disposition.to_verify(TABLE, facts) == ()
    noisy = script.replace("torch.relu(x) + 1", "torch.relu(x) + torch.rand_like(x)")
    assert disposition.to_verify(TABLE, Facts(**{**facts.__dict__, "script": noisy, "traced": traced_source(noisy)})) \
        == ("fallback_random",)


def test_a_rule_with_a_verified_condition_or_a_code_regex_is_checked_when_loaded():
    doc = {"dispositions": dict(TABLE.meanings),
           "rules": [{"id": "x", "disposition": "limitation", "when": {"verified": ["hints"]}, "reason": "r"},
                     {"id": "default", "disposition": "bug", "when": {}, "reason": "r"}]}
    with pytest.raises(RulesError, match="verified"):
        disposition.parse_dispositions(doc, {}, "t")
    doc["rules"][0]["when"] = {"code": "("}
    with pytest.raises(RulesError, match="`code` is not a valid regex"):
        disposition.parse_dispositions(doc, {}, "t")


def test_a_data_dependent_branch_named_only_by_its_place_is_a_limitation_once_completed():
    """torch.export on torch 2.13 prints `Caused by: (…repro.py:N in f)`; the pipeline completes it
    from the script that ran (workaround.with_caused_by_source) before the table reads it."""
    from bot.core.workaround import with_caused_by_source
    script = "\n" * 45 + "            if n == 0:\n"
    text = ("torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on data-dependent "
            "expression Eq(u0, 0) (unhinted: Eq(u0, 0)).  (Size-like symbols: none)\n\n"
            "Caused by: (andbox/repro.py:46 in forward)\nFor more information, run with TORCH_LOGS=\"dynamic\"\n")
    assert decide(failure_text=text).kind == "bug"
    assert decide(failure_text=with_caused_by_source(text, script)).rule == "data_dependent_branch"


def test_eager_failing_too_is_a_user_error_whatever_the_message():
    found = decide(failure_text=FUNDAMENTAL, layer="eager", eager_error="RuntimeError: mat1 and mat2 shapes")
    assert found.kind == "user_error" and "RuntimeError: mat1 and mat2 shapes" in found.reason


def test_torch_calling_it_a_dynamo_bug_outranks_the_limitation_rules():
    text = "Hint: This is likely to be a Dynamo bug. Please report an issue to PyTorch.\nHint: This graph break is fundamental"
    assert decide(failure_text=text).kind == "bug"


def test_nothing_run_or_nothing_reproduced_needs_information():
    assert decide(state="not_run", has_script=False).rule == "no_repro"
    needs_gpu = decide(state="not_run", reason_text="the repro needs a CUDA GPU and this runner has none")
    assert needs_gpu.kind == "needs_info" and "CUDA GPU" in needs_gpu.reason
    fixed = decide(state="not_reproduced", reason_text="did not reproduce on 2.13.0; the report used 2.4.0")
    assert fixed.kind == "needs_info" and fixed.wants_regression_test and not fixed.wants_pull_request


def test_a_limitation_in_an_issue_text_counts_when_nothing_could_run():
    assert decide(state="not_run", has_script=False, failure_text=FUNDAMENTAL).kind == "limitation"


def test_everything_else_is_a_compiler_bug_with_the_ladders_reason():
    found = decide(failure_text="torch._inductor.exc.InductorError: CppCompileError", layer="inductor",
                   ladder_note="Passes with every backend before Inductor and fails with it, so Inductor owns it.")
    assert found.kind == "bug" and found.wants_pull_request
    assert found.reason.endswith(": passes with every backend before Inductor and fails with it, so Inductor owns it")


def test_the_table_is_checked():
    good = {"dispositions": {k: "x" for k in disposition.DISPOSITIONS}, "rules": [
        {"id": "a", "disposition": "bug", "when": {}, "reason": "r"}]}
    disposition.parse_dispositions(good, {}, "d.yaml")
    with pytest.raises(RulesError, match="empty `when`"):
        disposition.parse_dispositions({**good, "rules": [{"id": "a", "disposition": "bug", "when": {"state": ["reproduced"]}, "reason": "r"}]}, {}, "d.yaml")
    with pytest.raises(RulesError, match="unknown disposition"):
        disposition.parse_dispositions({**good, "rules": [{"id": "a", "disposition": "wontfix", "when": {}, "reason": "r"}]}, {}, "d.yaml")


def test_the_documented_causes_a_runs_words_name_are_the_rules_reading_them():
    code = "UserError: Constraints violated (n)! - You marked n as dynamic but your code specialized it to be a constant (4). "
    example = code.replace("(4)", "(1)")
    where = "torch/export/_trace.py"
    assert disposition.explanations(TABLE, f"{where}\n{code}") == {"export_dim_specialized", "mark_dynamic_specialized"}
    assert "export_zero_one_specialized" in disposition.explanations(TABLE, f"{where}\n{example}")
    assert disposition.explanations(TABLE, "RuntimeError: boom") == frozenset()
