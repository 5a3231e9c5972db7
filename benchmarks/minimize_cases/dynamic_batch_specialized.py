# category: dynamic_shapes
# about: a text classifier's batch is marked dynamic, but a pooling helper reshapes with the configured batch size
# written 2026-11-27 as held out; the reducer changed on 2026-11-28 with its results in view, so it no longer is
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {"vocab": 300, "dim": 32, "heads": 4, "classes": 3, "batch_size": 4, "seq_len": 10}


class MeanMaxPool(nn.Module):
    def __init__(self, batch_size):
        super().__init__()
        self.batch_size = batch_size

    def forward(self, h):
        flat = h.reshape(self.batch_size, -1)
        mean = h.mean(dim=1)
        return torch.cat([mean, flat.view_as(h).amax(dim=1)], dim=-1)


class TextClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.attn = nn.MultiheadAttention(cfg["dim"], cfg["heads"], batch_first=True)
        self.ff = nn.Sequential(nn.Linear(cfg["dim"], 2 * cfg["dim"]), nn.GELU(), nn.Linear(2 * cfg["dim"], cfg["dim"]))
        self.pool = MeanMaxPool(cfg["batch_size"])
        self.head = nn.Linear(2 * cfg["dim"], cfg["classes"])

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.attn(h, h, h, need_weights=False)[0]
        h = h + self.ff(h)
        return self.head(self.pool(h))


def make_batch(cfg, generator):
    return torch.randint(0, cfg["vocab"], (cfg["batch_size"], cfg["seq_len"]), generator=generator)


torch.manual_seed(0)
model = TextClassifier(CONFIG).eval()
classify = torch.compile(model, backend="aot_eager")
tokens = make_batch(CONFIG, torch.Generator().manual_seed(1))
torch._dynamo.mark_dynamic(tokens, 0)
with torch.no_grad():
    probs = F.softmax(classify(tokens), dim=-1)
print(probs.argmax(dim=-1).tolist())
