# category: graph_break
# about: graph-break log of a compiled block that calls logger.info and a user graph_break in forward; it runs fine
import logging

import torch

torch._logging.set_logs(graph_breaks=True)
log = logging.getLogger("model")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        log.info("activation norm %s", h.norm())
        torch._dynamo.graph_break()
        return torch.tanh(h)


model = torch.compile(Block())
for _ in range(3):
    out = model(torch.randn(4, 8))
print("done", out.shape)
