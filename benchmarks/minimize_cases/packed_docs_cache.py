# category: graph_break
# about: a packed-document pooler memoizes its embedding by an md5 of the tokens' bytes under fullgraph=True
# history: written 2026-11-28 as a held-out case, after the reducer change of that day (5f90525); the reducer changes since were made with its results in view, so it is no longer held out
import hashlib

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "vocab": 500,
    "dim": 32,
    "heads": 4,
    "max_docs": 3,
    "pad_id": 0,
    "min_len": 4,
}


class DocPooler(nn.Module):
    """Mean-pools each document of a packed batch (several documents per row, lengths given)."""

    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab"], cfg["dim"], padding_idx=cfg["pad_id"])
        self.attn = nn.MultiheadAttention(cfg["dim"], cfg["heads"], batch_first=True)
        self.proj = nn.Linear(cfg["dim"], cfg["dim"])
        self.max_docs = cfg["max_docs"]
        self._cache = {}

    def pool(self, hidden, lengths):
        pieces = torch.split(hidden, lengths.tolist(), dim=0)
        pooled = torch.stack([p.mean(dim=0) for p in pieces])
        keep = torch.nonzero(lengths > CONFIG["min_len"]).squeeze(1)
        return pooled[keep]

    def cached_embed(self, tokens):
        key = hashlib.md5(tokens.numpy().tobytes()).hexdigest()
        if key not in self._cache:
            self._cache[key] = self.embed(tokens)
        return self._cache[key]

    def forward(self, tokens, lengths):
        h = self.cached_embed(tokens)
        h, _ = self.attn(h, h, h, need_weights=False)
        h = F.gelu(self.proj(h))
        return self.pool(h[0], lengths[: self.max_docs])


def make_batch(cfg, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([5, 7, 4])
    tokens = torch.randint(1, cfg["vocab"], (1, int(lengths.sum())), generator=g)
    return tokens, lengths


def main():
    model = DocPooler(CONFIG).eval()
    compiled = torch.compile(model, fullgraph=True)
    tokens, lengths = make_batch(CONFIG)
    with torch.no_grad():
        expected = model(tokens, lengths)
        got = compiled(tokens, lengths)
    print("max diff", (expected - got).abs().max().item())


if __name__ == "__main__":
    main()
