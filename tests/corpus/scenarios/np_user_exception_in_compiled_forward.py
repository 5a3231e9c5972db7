# category: not_pt2
# about: the user's own ValueError escapes a torch.compile'd forward (dynamo frames, no compiler error); eager raises it too
# corpus: skip (known miss: the fallback calls it unknown because the traceback passes through Dynamo; the error is the user's own)
import torch


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        if x.dim() != 3:
            raise ValueError(f"expected (batch, seq, dim) input, got {tuple(x.shape)}")
        return self.fc(x)


print(torch.compile(Encoder())(torch.randn(4, 8)))
