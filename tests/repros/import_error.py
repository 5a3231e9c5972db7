# category: not_pt2
# about: a missing dependency, nothing to do with the compiler
import torch
import torchvision_models_that_do_not_exist  # noqa: F401

print(torch.compile)
