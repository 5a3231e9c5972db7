# category: not_pt2
# about: eager Tensor.numpy() in an environment without NumPy (RuntimeError: Numpy is not available)
import torch

preds = torch.randn(4, 3).softmax(-1)
print(preds.argmax(-1).numpy())
