# category: aoti_failure
# about: aoti_load_package on a package path that does not exist (deployment step)
import torch

MODEL_PATH = "/opt/models/ranker/ranker_v3.pt2"

runner = torch._inductor.aoti_load_package(MODEL_PATH)
print(runner(torch.randn(1, 16)))
