# category: graph_break
# about: a small vision transformer times each encoder block with time.perf_counter() inside forward; fullgraph=True cannot trace the timer
# held out: written 2026-12-02 after the reducer's last change (413401f, the records pass), never used to tune it
import time
from collections import defaultdict

import torch
import torch.nn as nn

PATCH = 4
IMAGE = 16
DIM = 32
HEADS = 4
DEPTH = 3


class LatencyLog:
    def __init__(self):
        self.totals = defaultdict(float)

    def record(self, name, start):
        self.totals[name] += time.perf_counter() - start

    def summary(self):
        return {name: round(sec * 1e3, 3) for name, sec in self.totals.items()}


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, classes=10, log=None):
        super().__init__()
        self.embed = nn.Conv2d(3, DIM, PATCH, stride=PATCH)
        self.pos = nn.Parameter(torch.zeros(1, (IMAGE // PATCH) ** 2, DIM))
        self.blocks = nn.ModuleList([Block(DIM, HEADS) for _ in range(DEPTH)])
        self.head = nn.Linear(DIM, classes)
        self.log = log

    def forward(self, images):
        x = self.embed(images).flatten(2).transpose(1, 2) + self.pos
        for i, block in enumerate(self.blocks):
            start = time.perf_counter()
            x = block(x)
            self.log.record(f"block{i}", start)
        return self.head(x.mean(dim=1))


def main():
    torch.manual_seed(0)
    log = LatencyLog()
    model = TinyViT(log=log).eval()
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        for _ in range(3):
            preds = compiled(torch.randn(2, 3, IMAGE, IMAGE)).argmax(dim=-1)
    print("predictions:", preds.tolist())
    print("latency (ms):", log.summary())


if __name__ == "__main__":
    main()
