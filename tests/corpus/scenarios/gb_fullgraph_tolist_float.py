# category: graph_break
# about: Tensor.tolist() on a float tensor under fullgraph=True
import torch


def top_scores(logits):
    probs = logits.softmax(-1)
    values = probs.tolist()
    return torch.tensor(sorted(values, reverse=True)[:3])


print(torch.compile(top_scores, fullgraph=True)(torch.randn(10)))
