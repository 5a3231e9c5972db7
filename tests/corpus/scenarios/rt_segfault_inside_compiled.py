# category: runtime_crash
# about: a compiled function segfaults while it runs (NULL pointer read via ctypes in the compiled region)
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
