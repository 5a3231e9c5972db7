# category: triton_kernel_bug
# device: cuda
# about: an out-of-range gather under compile trips the kernel's device-side bounds assert
import torch


def gather(table, index):
    return table[index] * 2


table = torch.randn(64, device="cuda")
index = torch.tensor([1, 5, 200], device="cuda")
torch.compile(gather)(table, index)
torch.cuda.synchronize()
