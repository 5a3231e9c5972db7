# category: graph_break
# about: copy.deepcopy of a tensor inside a fullgraph=True function
import copy

import torch


def ema_update(shadow, param, decay=0.99):
    snapshot = copy.deepcopy(shadow)
    return snapshot * decay + param * (1 - decay)


step = torch.compile(ema_update, fullgraph=True)
print(step(torch.zeros(8), torch.ones(8)))
