from bot.core.tracebacks import parse_bare_exception, parse_head, parse_pytest_failure, parse_python_chain


def numbered(text: str, first: int = 1):
    return [(first + i, line) for i, line in enumerate(text.split("\n"))]


CHAINED = """\
Traceback (most recent call last):
  File "/site-packages/torch/_dynamo/convert_frame.py", line 2024, in _compile
    raise_unimplemented_cache_limit_exceeded()
torch._dynamo.exc.Unsupported: Dynamo recompile limit exceeded
  Explanation: Dynamo attempted to recompile the code object too many times

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/tmp/repro.py", line 8, in <module>
    f(torch.randn(3), i)
torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit"""


def test_chained_exceptions_are_read_root_cause_first():
    chain = parse_python_chain(numbered(CHAINED))
    assert [e.type_name for e in chain.exceptions] == [
        "torch._dynamo.exc.Unsupported", "torch._dynamo.exc.FailOnRecompileLimitHit"]
    assert chain.root.origin == "/site-packages/torch/_dynamo/convert_frame.py"
    assert chain.final.line == 12
    assert "Explanation" in chain.root.message


def test_each_frame_keeps_the_source_line_printed_under_it():
    text = CHAINED.replace("    f(torch.randn(3), i)", "    f(torch.randn(3), i)\n      ^^^^^^^^^^^^^^^^^^^^")
    chain = parse_python_chain(numbered(text))
    assert chain.final.raise_site == "f(torch.randn(3), i)"
    assert chain.root.frames[0].source == "raise_unimplemented_cache_limit_exceeded()"
    bare = parse_python_chain(numbered('Traceback (most recent call last):\n  File "a.py", line 1, in f\nKeyError: 1'))
    assert bare.final.frames[0].source == "" and bare.final.raise_site is None


def test_an_unrelated_earlier_traceback_is_not_part_of_the_final_chain():
    text = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\nretrying...\n" + CHAINED
    chain = parse_python_chain(numbered(text))
    assert chain.root.type_name == "torch._dynamo.exc.Unsupported"


def test_message_stops_at_a_code_fence():
    text = "```\nTraceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: bad\nmore detail\n```\nThanks!"
    chain = parse_python_chain(numbered(text))
    assert chain.final.message == "ValueError: bad\nmore detail"


def test_pytest_long_format_with_frames():
    text = """\
____________________ TestRepro.test_cond ____________________
test/dynamo/test_x.py:41: in test_cond
    torch.compile(f, fullgraph=True)(x)
torch/_dynamo/eval_frame.py:1183: in compile_wrapper
    raise e.remove_dynamo_frames() from None
E   torch._dynamo.exc.Unsupported: Data-dependent branching
E     Explanation: Detected data-dependent branching"""
    chain = parse_pytest_failure(numbered(text))
    assert chain.final.type_name == "torch._dynamo.exc.Unsupported"
    assert chain.final.line == 6
    assert [f.path for f in chain.final.frames] == ["test/dynamo/test_x.py", "torch/_dynamo/eval_frame.py"]


def test_bare_exception_line_without_traceback():
    chain = parse_bare_exception(numbered("I get this:\n\ntorch._inductor.exc.InductorError: LoweringException: boom\n\nany idea?"))
    assert chain.final.type_name == "torch._inductor.exc.InductorError"
    assert chain.final.frames == ()


def test_head_parsing_rejects_prose():
    assert parse_head("KeyError: 'x'") == ("KeyError", "'x'")
    assert parse_head("SystemExit") == ("SystemExit", "")
    assert parse_head("Note: this is prose") == ("Note", "this is prose")  # shape only; callers check context
    assert parse_head("hello world") is None
    assert parse_head("NOTE: shouting") is None


def test_bare_prose_with_a_colon_is_not_an_exception():
    assert parse_bare_exception(numbered("Note: I use torch.compile\nExpected: it works")) is None


NOTEBOOK = """\
---------------------------------------------------------------------------
InternalTorchDynamoError                  Traceback (most recent call last)
Cell In[7], line 4
      2 x = torch.randn(8, 8)
      3 opt = torch.compile(model)
----> 4 opt(x)

File /opt/conda/lib/python3.10/site-packages/torch/_dynamo/eval_frame.py:451, in _TorchDynamoContext.__call__.<locals>._fn(*args, **kwargs)
    449 prior = set_eval_frame(callback)
    450 try:
--> 451     return fn(*args, **kwargs)

File /opt/conda/lib/python3.10/site-packages/torch/_dynamo/variables/builder.py:1203, in VariableBuilder.wrap_tensor(self, value)
   1201 if source in self.tx.output.input_source_to_var:
-> 1203     raise AssertionError("unreachable")

InternalTorchDynamoError: AssertionError: unreachable

from user code:
   File "/tmp/ipykernel_1/123.py", line 5, in forward
    return self.fc(x)
"""

LEGACY_NOTEBOOK = """\
RuntimeError                              Traceback (most recent call last)
<ipython-input-3-5f2a> in <module>
----> 1 torch.compile(f)(x)

/usr/local/lib/python3.8/site-packages/torch/_inductor/lowering.py in wrapped(*args, **kwargs)
    290 
--> 291         out = decomp_fn(*args, **kwargs)

RuntimeError: shape mismatch in lowering"""


def test_ipython_traceback_from_a_notebook():
    chain = parse_python_chain(numbered(NOTEBOOK))
    assert chain.final.type_name == "InternalTorchDynamoError"
    assert chain.final.line == 17
    assert [f.path.rsplit("/", 1)[-1] for f in chain.final.frames] == ["In[7]", "eval_frame.py", "builder.py"]
    assert chain.final.origin.endswith("torch/_dynamo/variables/builder.py")
    assert chain.final.frames[-1].function == "VariableBuilder.wrap_tensor"


def test_legacy_ipython_traceback():
    chain = parse_python_chain(numbered(LEGACY_NOTEBOOK))
    assert chain.final.head == "RuntimeError: shape mismatch in lowering"
    assert chain.final.origin.endswith("torch/_inductor/lowering.py")


def test_launcher_prefixes_are_read_through():
    from bot.core.logtext import clean_text

    text = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/w/train.py", line 9, in <module>
[rank0]:     step(model, batch)
[rank0]: torch._dynamo.exc.Unsupported: Dynamic slicing with Tensor arguments"""
    chain = parse_python_chain(numbered(clean_text(text)))
    assert chain.final.type_name == "torch._dynamo.exc.Unsupported"
    assert chain.final.frames[0].path == "/w/train.py"


def test_a_traceback_cut_off_before_its_exception_keeps_its_frames():
    text = '```\nTraceback (most recent call last):\n  File "/site/torch/_inductor/scheduler.py", line 9, in fuse\n    x()\n```\nthe rest was too long'
    chain = parse_python_chain(numbered(text))
    assert chain.final.type_name == "<traceback cut off>"
    assert chain.final.origin == "/site/torch/_inductor/scheduler.py"
