# category: graph_break
# about: a unittest run where one test fails because a fullgraph=True function reaches a graph break
import unittest

import torch


def normalize(x):
    mean = x.mean()
    if mean > 0:  # branch on a tensor value
        x = x - mean
    return x


class TestCompiledNormalize(unittest.TestCase):
    def test_eager(self):
        self.assertEqual(normalize(torch.ones(3)).shape, (3,))

    def test_fullgraph(self):
        compiled = torch.compile(normalize, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(torch.randn(3, 3)).shape, torch.Size([3, 3]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
