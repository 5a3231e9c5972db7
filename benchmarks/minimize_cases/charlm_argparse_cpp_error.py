# category: backend_compiler_failed
# about: a char-level LM run from argparse with module constants; an Inductor C++ compile error (injected) in its gated MLP
# history: written 2026-11-28 as a held-out case, after the reducer change of that day (5f90525); the reducer changes since were made with its results in view, so it is no longer held out
import argparse
import math

import torch
import torch.nn as nn
import torch._inductor.config as inductor_config

# reproduces on our CI box; on my laptop the same compile error shows up only with this flag
inductor_config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"

HIDDEN = 48
VOCAB = 1000


def get_args():
    parser = argparse.ArgumentParser(description="tiny char-level language model")
    parser.add_argument("--batch-size", type=int, default=12)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--compile", action="store_true", default=True)
    return parser.parse_args()


class GatedMLP(nn.Module):
    def __init__(self, dim, expansion=4, dropout=0.0):
        super().__init__()
        self.up = nn.Linear(dim, dim * expansion)
        self.gate = nn.Linear(dim, dim * expansion)
        self.down = nn.Linear(dim * expansion, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.down(torch.relu(self.gate(x)) * self.up(x)))


class CharLM(nn.Module):
    def __init__(self, vocab, hidden, dropout):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.mlp = GatedMLP(hidden, dropout=dropout)
        self.out = nn.Linear(hidden, vocab)
        self.scale = math.sqrt(hidden)

    def forward(self, tokens):
        h = self.embed(tokens) * self.scale
        h = h + self.mlp(self.norm(h))
        return self.out(h)


def main():
    args = get_args()
    torch.manual_seed(0)
    model = CharLM(VOCAB, HIDDEN, args.dropout)
    if args.compile:
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(3):
        tokens = torch.randint(0, VOCAB, (args.batch_size, args.seq_len))
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
