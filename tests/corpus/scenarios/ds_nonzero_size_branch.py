# category: dynamic_shapes
# about: capture_dynamic_output_shape_ops: a branch on the size of nonzero() is a data-dependent guard
import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


@torch.compile(fullgraph=True)
def active_rows(mask, x):
    idx = torch.nonzero(mask).squeeze(-1)
    if idx.shape[0] > 2:
        return x[idx].mean(0)
    return x.mean(0)


print(active_rows(torch.tensor([True, False, True, True]), torch.randn(4, 3)))
