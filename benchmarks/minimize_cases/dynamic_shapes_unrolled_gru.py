# category: dynamic_shapes
# about: a sensor-activity classifier unrolls a hand-written GRU cell over time; the time dim is marked dynamic but the Python loop over it specializes it
# held out: written 2026-12-02 after the reducer's last change (413401f, the records pass), never used to tune it
import torch
import torch.nn as nn

CHANNELS = 6
HIDDEN = 24
ACTIVITIES = ["walk", "run", "sit", "stand", "stairs"]


class GRUCell(nn.Module):
    def __init__(self, inp, hidden):
        super().__init__()
        self.x2h = nn.Linear(inp, 3 * hidden)
        self.h2h = nn.Linear(hidden, 3 * hidden, bias=False)

    def forward(self, x, h):
        xr, xz, xn = self.x2h(x).chunk(3, dim=-1)
        hr, hz, hn = self.h2h(h).chunk(3, dim=-1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1 - z) * n + z * h


class ActivityNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(CHANNELS)
        self.cell = GRUCell(CHANNELS, HIDDEN)
        self.head = nn.Linear(HIDDEN, len(ACTIVITIES))

    def forward(self, readings):
        x = self.norm(readings)
        h = readings.new_zeros(readings.size(0), HIDDEN)
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
        return self.head(h)


def load_window(batch, seconds, hz=2):
    torch.manual_seed(seconds)
    return torch.randn(batch, seconds * hz, CHANNELS)


def main():
    model = ActivityNet().eval()
    classify = torch.compile(model)
    with torch.no_grad():
        for seconds in (2, 4):
            window = load_window(4, seconds)
            torch._dynamo.mark_dynamic(window, 1)
            labels = classify(window).argmax(dim=-1)
            print(seconds, [ACTIVITIES[i] for i in labels.tolist()])


if __name__ == "__main__":
    main()
