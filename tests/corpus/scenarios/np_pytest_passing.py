# category: not_pt2
# about: a pytest run of compile tests that all pass (output full of "compile" words, no failure)
import pathlib
import sys

import pytest

pathlib.Path("test_compiled_ops.py").write_text('''
import torch


def test_compile_matches_eager():
    fn = lambda x: torch.sin(x) + torch.cos(x)
    x = torch.randn(8)
    torch.testing.assert_close(torch.compile(fn, backend="eager")(x), fn(x))


def test_compile_fullgraph_no_graph_break():
    fn = torch.compile(lambda x: x.relu() * 2, fullgraph=True, backend="eager")
    assert fn(torch.ones(3)).sum().item() == 6.0


def test_recompile_not_triggered_for_same_shape():
    fn = torch.compile(lambda x: x + 1, backend="eager")
    for _ in range(3):
        fn(torch.ones(4))
''')
sys.exit(pytest.main(["-v", "-p", "no:cacheprovider", "test_compiled_ops.py"]))
