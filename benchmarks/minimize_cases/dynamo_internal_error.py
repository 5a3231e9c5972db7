# category: dynamo_internal_error
# about: Dynamo's tracer crashes on a tensor method inside a small attention model (simulated tracer regression)
import math

import torch
import torch.nn as nn
from torch._dynamo.variables import tensor as tensor_vt

_original_call_method = tensor_vt.TensorVariable.call_method


def _call_method(self, tx, name, args, kwargs):
    if name == "transpose":
        source = None
        return source.reconstruct(tx)
    return _original_call_method(self, tx, name, args, kwargs)


tensor_vt.TensorVariable.call_method = _call_method


class SelfAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
        return scores.softmax(dim=-1) @ v


class Tagger(nn.Module):
    def __init__(self, vocab=100, dim=16, tags=5, max_len=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(max_len, dim))
        self.attn = SelfAttention(dim)
        self.proj = nn.Linear(dim, tags)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.proj(x + self.attn(x))


model = Tagger()
tokens = torch.randint(0, 100, (3, 7))
print(torch.compile(model)(tokens).shape)
