# category: graph_break
# about: a debug print() left in a CNN's forward breaks torch.compile(fullgraph=True)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.gelu(self.norm(self.conv(x)))


class Classifier(nn.Module):
    def __init__(self, classes=10, width=16):
        super().__init__()
        self.stem = ConvBlock(3, width)
        self.body = nn.Sequential(ConvBlock(width, width), nn.MaxPool2d(2), ConvBlock(width, width * 2))
        self.head = nn.Linear(width * 2, classes)
        self.dropout = nn.Dropout(0.1)

    def forward(self, images):
        x = self.stem(images)
        x = self.body(x)
        features = x.mean(dim=(2, 3))
        print("features", features.shape)
        return self.head(self.dropout(features))


def accuracy(logits, labels):
    return (logits.argmax(dim=1) == labels).float().mean()


torch.manual_seed(0)
model = Classifier().eval()
images = torch.randn(8, 3, 32, 32)
labels = torch.randint(0, 10, (8,))
compiled = torch.compile(model, fullgraph=True)
with torch.no_grad():
    logits = compiled(images)
print("accuracy", accuracy(logits, labels).item())
