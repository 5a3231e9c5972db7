# category: graph_break
# about: a keyword-spotting CNN clamps outliers only when the batch has any; the branch on a tensor breaks fullgraph=True
# written 2026-11-27 as held out; the reducer changed on 2026-11-28 with its results in view, so it no longer is
import torch
import torch.nn as nn
import torch.nn.functional as F


def mel_like_features(waves, bins=20, hop=32):
    frames = waves.unfold(-1, 64, hop)
    spectrum = torch.fft.rfft(frames * torch.hann_window(64), dim=-1).abs()
    return torch.log1p(spectrum[..., :bins]).transpose(1, 2)


class OutlierClamp(nn.Module):
    def __init__(self, limit=3.0):
        super().__init__()
        self.limit = limit

    def forward(self, x):
        if (x.abs() > self.limit).any():
            x = x.clamp(-self.limit, self.limit)
        return x


class KeywordSpotter(nn.Module):
    def __init__(self, bins=20, channels=24, keywords=6):
        super().__init__()
        self.clamp = OutlierClamp()
        self.conv1 = nn.Conv1d(bins, channels, 5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, 5, padding=2, groups=4)
        self.norm = nn.BatchNorm1d(channels)
        self.classify = nn.Linear(channels, keywords)

    def forward(self, features):
        x = self.clamp(features)
        x = F.relu(self.norm(self.conv1(x)))
        x = x + F.relu(self.conv2(x))
        return self.classify(x.amax(dim=-1))


def top_keywords(logits, names):
    return [names[i] for i in logits.argmax(dim=-1).tolist()]


torch.manual_seed(0)
names = ["yes", "no", "up", "down", "left", "right"]
model = KeywordSpotter().eval()
waves = torch.randn(4, 1024) * 2
spotter = torch.compile(model, fullgraph=True)
with torch.no_grad():
    print(top_keywords(spotter(mel_like_features(waves)), names))
