# category: performance
# about: a compiled per-sample normalization is several times slower than eager (guard + wrapper overhead); no error
import time

import torch


def normalize(x):
    return (x - 0.5) * 2


def bench(fn, x, iters=5000):
    for _ in range(50):
        fn(x)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn(x)
    return (time.perf_counter() - t0) / iters * 1e6


x = torch.rand(3)
compiled = torch.compile(normalize)
compiled(x)
eager_us = bench(normalize, x)
compiled_us = bench(compiled, x)
print(f"eager:    {eager_us:7.1f} us/call")
print(f"compiled: {compiled_us:7.1f} us/call")
print(f"torch.compile is {compiled_us / eager_us:.1f}x {'slower' if compiled_us > eager_us else 'faster'} than eager")
