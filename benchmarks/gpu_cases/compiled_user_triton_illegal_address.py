# category: runtime_crash
# device: cuda
# about: a compiled function calls the user's Triton kernel, which reads out of bounds; eager does too
import torch
import triton
import triton.language as tl


@triton.jit
def copy_far(x_ptr, out_ptr):
    far = tl.full((128,), 1 << 40, tl.int64)  # a terabyte past the buffer
    offsets = tl.arange(0, 128).to(tl.int64) + far
    tl.store(out_ptr + tl.arange(0, 128), tl.load(x_ptr + offsets))


@torch.compile
def f(x):
    out = torch.empty_like(x)
    copy_far[(1,)](x, out)
    return out + 1


f(torch.zeros(128, device="cuda"))
torch.cuda.synchronize()
