# category: dynamic_shapes
# about: a batch dim marked unbacked (mark_unbacked) meets a Python branch on its size under fullgraph=True
import torch


@torch.compile(fullgraph=True)
def truncate(tokens):
    if tokens.shape[0] > 512:
        return tokens[:512]
    return tokens


batch = torch.randint(0, 1000, (600, 8))
torch._dynamo.decorators.mark_unbacked(batch, 0)
print(truncate(batch).shape)
