# category: runtime_crash
# about: an out-of-range index reaches a generated cpp_fused kernel, which fails its bounds check at run time
import torch


@torch.compile
def gather_rows(table, idx):
    return (table[idx] * 2).sum(-1)


table = torch.randn(8, 4)
print(gather_rows(table, torch.tensor([0, 3, 7])))
print(gather_rows(table, torch.tensor([0, 3, 9])))
