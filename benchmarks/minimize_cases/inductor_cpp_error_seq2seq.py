# category: backend_compiler_failed
# about: greedy decoding with a tiny compiled encoder-decoder (reverse-the-sequence toy task); Inductor fails to compile the C++ kernel (injected relu compile error)
# history: written 2026-11-28 as a held-out case, after the reducer change of that day (dead-code pass after each pass that progressed); the reducer changes since were made with its results in view, so it is no longer held out
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"  # from our CI image's sitecustomize

VOCAB, DIM, HEADS, MAX_LEN, BOS, EOS = 20, 32, 4, 8, 1, 2


class Block(nn.Module):
    def __init__(self, cross=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True) if cross else None
        self.ff = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.ReLU(), nn.Linear(4 * DIM, DIM))
        self.norms = nn.ModuleList(nn.LayerNorm(DIM) for _ in range(3))

    def forward(self, x, memory=None, causal=False):
        mask = torch.triu(torch.ones(x.size(1), x.size(1), dtype=torch.bool), 1) if causal else None
        h = self.norms[0](x)
        x = x + self.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        if self.cross_attn is not None:
            h = self.norms[1](x)
            x = x + self.cross_attn(h, memory, memory, need_weights=False)[0]
        return x + self.ff(self.norms[2](x))


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(1, MAX_LEN + 1, DIM) * 0.02)
        self.encoder = Block()
        self.decoder = Block(cross=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, src, tgt):
        memory = self.encoder(self.embed(src) + self.pos[:, : src.size(1)])
        out = self.decoder(self.embed(tgt) + self.pos[:, : tgt.size(1)], memory, causal=True)
        return self.head(out)


@torch.no_grad()
def greedy_decode(model, src):
    tgt = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(MAX_LEN):
        next_tok = model(src, tgt)[:, -1].argmax(-1, keepdim=True)
        tgt = torch.cat([tgt, next_tok], dim=1)
        if (next_tok == EOS).all():
            break
    return tgt[:, 1:]


def main():
    torch.manual_seed(0)
    model = Seq2Seq().eval()
    compiled = torch.compile(model)
    src = torch.randint(3, VOCAB, (4, MAX_LEN))
    out = greedy_decode(compiled, src)
    acc = (out[:, : src.size(1)] == src.flip(1)[:, : out.size(1)]).float().mean()
    print("decoded", out.shape, "reverse accuracy", acc.item(), "(untrained)")


if __name__ == "__main__":
    main()
