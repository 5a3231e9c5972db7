# category: not_pt2
# about: a benchmark script dies on a missing third-party package before anything is compiled
import torch
from transformers import AutoModel  # the torch.compile benchmark needs transformers

model = torch.compile(AutoModel.from_pretrained("bert-base-uncased"))
