# category: runtime_crash
# device: cuda
# about: the user's own Triton kernel reads far out of bounds (no torch.compile anywhere)
import torch
import triton
import triton.language as tl


@triton.jit
def copy_far(x_ptr, out_ptr):
    far = tl.full((128,), 1 << 40, tl.int64)  # a terabyte past the buffer
    offsets = tl.arange(0, 128).to(tl.int64) + far
    tl.store(out_ptr + tl.arange(0, 128), tl.load(x_ptr + offsets))


x = torch.zeros(128, device="cuda")
out = torch.empty_like(x)
copy_far[(1,)](x, out)
torch.cuda.synchronize()
