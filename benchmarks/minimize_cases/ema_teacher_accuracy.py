# category: accuracy
# about: an EMA teacher (dataclass settings, deepcopy of the student) compiled and checked against eager each step (injected relu accuracy bug)
import copy
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"  # set by our CI image, see the linked thread


@dataclass
class TrainSettings:
    in_features: int = 20
    hidden: int = 40
    classes: int = 5
    momentum: float = 0.99
    batch: int = 16
    steps: int = 2


def build_student(s: TrainSettings) -> nn.Module:
    return nn.Sequential(
        nn.Linear(s.in_features, s.hidden),
        nn.ReLU(),
        nn.Linear(s.hidden, s.hidden),
        nn.ReLU(),
        nn.Linear(s.hidden, s.classes),
    )


@torch.no_grad()
def ema_update(teacher, student, momentum):
    for t, p in zip(teacher.parameters(), student.parameters()):
        t.mul_(momentum).add_(p, alpha=1 - momentum)


def main():
    s = TrainSettings()
    torch.manual_seed(0)
    student = build_student(s)
    teacher = copy.deepcopy(student).requires_grad_(False)
    compiled_teacher = torch.compile(teacher)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for step in range(s.steps):
        x = torch.randn(s.batch, s.in_features)
        loss = nn.functional.cross_entropy(student(x), torch.randint(0, s.classes, (s.batch,)))
        loss.backward()
        opt.step()
        opt.zero_grad()
        ema_update(teacher, student, s.momentum)
        eager_logits, compiled_logits = teacher(x), compiled_teacher(x)
        assert torch.allclose(eager_logits, compiled_logits, atol=1e-4), (
            f"step {step}: teacher logits differ by {(eager_logits - compiled_logits).abs().max():.4f}")
    print("ok")


if __name__ == "__main__":
    main()
