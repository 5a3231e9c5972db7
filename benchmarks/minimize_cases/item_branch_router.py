# category: dynamic_shapes
# about: a mixture-of-experts router reads its load with .item() and branches on it under fullgraph=True
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class MoELayer(nn.Module):
    def __init__(self, dim=32, hidden=64, experts=4, capacity=0.5):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(experts)])
        self.norm = nn.LayerNorm(dim)
        self.capacity = capacity

    def forward(self, x):
        weights = F.softmax(self.router(self.norm(x)), dim=-1)
        load = weights.max(dim=-1).values.mean()
        if load.item() > self.capacity:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            out = out + weights[..., index:index + 1] * expert(x)
        return x + out


class Model(nn.Module):
    def __init__(self, vocab=500, dim=32, depth=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([MoELayer(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


torch.manual_seed(0)
model = Model()
tokens = torch.randint(0, 500, (2, 12))
print(torch.compile(model, fullgraph=True)(tokens).shape)
