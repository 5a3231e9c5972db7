from bot.core.signature import make_signature, normalize, short_type


def test_same_failure_on_two_machines_gives_the_same_signature():
    here = "/tmp/torchinductor_alice/c6/cc6t25b7zalalxcaliklwseqzl5zkextcobt7mfwvnk5ql4jpzpv.main.cpp:15:33: error: 'compile' was not declared"
    there = "/var/tmp/torchinductor_ci/ab/cab77b7zalalxcaliklwseqzl5zkextcobt7mfwvnk5ql4jpzp.main.cpp:16:3: error: 'compile' was not declared"
    assert normalize(here) == normalize(there) == "<generated>.main.cpp: error: 'compile' was not declared"


def test_addresses_line_numbers_and_sizes_are_dropped():
    a = normalize('object at 0x7f3a2b1c0d10 in "/home/a/site-packages/torch/_dynamo/exc.py", line 727: size 64')
    b = normalize('object at 0x55d0c0ffee00 in "/opt/conda/lib/python3.10/site-packages/torch/_dynamo/exc.py", line 731: size 8')
    assert a == b
    assert "torch/_dynamo/exc.py" in a


def test_graph_break_ids_survive_normalization():
    text = normalize("see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html")
    assert text.endswith("[GB0170]")


def test_torch_log_prefix_is_not_part_of_the_signature():
    a = normalize("V1122 23:41:12.671000 2472 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] Graph break in user code")
    assert a == "Graph break in user code"


def test_make_signature_uses_the_short_exception_type():
    assert short_type("torch._dynamo.exc.Unsupported") == "Unsupported"
    assert make_signature("graph_break", "torch._dynamo.exc.Unsupported", "Data-dependent branching") == \
        "graph_break|Unsupported|Data-dependent branching"


def test_generated_code_in_any_cache_dir_is_the_same():
    sandbox = "/tmp/pt2-sandbox-krh0m__o/inductor_cache/c6/cc6t25b7zalalxcaliklwseqzl5zkextcobt7mfwvnk5ql4jpzpv.main.cpp:15:33: error: x"
    default = "/tmp/torchinductor_root/c6/cc6t25b7zalalxcaliklwseqzl5zkextcobt7mfwvnk5ql4jpzpv.main.cpp:15:33: error: x"
    assert normalize(sandbox) == normalize(default) == "<generated>.main.cpp: error: x"


def test_the_name_of_the_users_variable_in_a_guard_source_is_not_part_of_the_signature():
    """`torch.compile(Forecaster())(x)` and `torch.compile(nn.Linear(2, 1))(x)` violate the same constraint;
    Dynamo names the input by the forward's parameter or by how it was passed (`L['x']`, `L['args'][0]`)."""
    wrapped = normalize("Constraints violated (L['x'].size()[1])! For more information, run with TORCH_LOGS=\"+dynamic\".")
    layer = normalize("Constraints violated (L['args'][0].size()[1])! For more information, run with TORCH_LOGS=\"+dynamic\".")
    assert wrapped == layer == 'Constraints violated (L[<name>].size()[N])! For more information, run with TORCH_LOGS="+dynamic".'
    assert normalize("L['x'].size()[0]") != normalize("L['x'].stride()[0]")
