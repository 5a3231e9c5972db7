# category: not_pt2
# about: user code called from a compiled function segfaults (a ctypes NULL read in a helper the compiled function calls, which Dynamo leaves to eager); eager crashes the same way
# corpus: skip (known miss: fatal_signal calls it runtime_crash, though the crashing frame is ctypes under user code, not compiled code)
import ctypes
import faulthandler

import torch

faulthandler.enable()


def read_header(ptr):
    return ctypes.string_at(ptr)


@torch.compile
def decode(x, ptr):
    y = torch.nn.functional.gelu(x * 2)
    read_header(ptr)
    return y + 1


print(decode(torch.randn(4), 0))
