# category: export_failure
# about: a small anchor-based detector whose forward returns a Detections dataclass; exporting it for deployment fails
# history: written 2026-11-28 as a held-out case, after the reducer change of that day (dead-code pass after each pass that progressed); the reducer changes since were made with its results in view, so it is no longer held out
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_CLASSES, NUM_ANCHORS, TOP_K, STRIDE = 3, 2, 10, 4
ANCHOR_SIZES = (8.0, 16.0)


@dataclass
class Detections:
    boxes: torch.Tensor   # (B, TOP_K, 4) xyxy
    scores: torch.Tensor  # (B, TOP_K)
    labels: torch.Tensor  # (B, TOP_K)


class Backbone(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(width)

    def forward(self, x):
        return F.relu(self.bn(self.conv2(F.relu(self.conv1(x)))))


def make_anchors(h, w):
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    centers = torch.stack([xs, ys], -1).reshape(-1, 1, 2).float() * STRIDE + STRIDE / 2
    sizes = torch.tensor(ANCHOR_SIZES).view(1, -1, 1).expand(h * w, -1, 2)
    return torch.cat([centers - sizes / 2, centers + sizes / 2], -1).reshape(-1, 4)


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.cls_head = nn.Conv2d(16, NUM_ANCHORS * NUM_CLASSES, 1)
        self.box_head = nn.Conv2d(16, NUM_ANCHORS * 4, 1)

    def forward(self, images):
        feats = self.backbone(images)
        b, _, h, w = feats.shape
        logits = self.cls_head(feats).permute(0, 2, 3, 1).reshape(b, -1, NUM_CLASSES)
        deltas = self.box_head(feats).permute(0, 2, 3, 1).reshape(b, -1, 4)
        boxes = make_anchors(h, w).unsqueeze(0) + deltas * STRIDE
        scores, labels = logits.sigmoid().max(-1)
        top, idx = scores.topk(TOP_K, dim=1)
        return Detections(boxes.gather(1, idx.unsqueeze(-1).expand(-1, -1, 4)), top, labels.gather(1, idx))


def main():
    torch.manual_seed(0)
    model = Detector().eval()
    images = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        dets = model(images)
    print("eager:", dets.boxes.shape, "best score", dets.scores.max().item())
    ep = torch.export.export(model, (images,))
    print(ep.graph_module.code[:200])


if __name__ == "__main__":
    main()
