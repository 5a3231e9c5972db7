# category: aoti_failure
# about: aoti_load_package on a truncated .pt2 archive
import os

import torch

with open("model.pt2", "wb") as fh:
    fh.write(b"PK\x03\x04" + os.urandom(512))  # a partial download: zip magic, no central directory

runner = torch._inductor.aoti_load_package("model.pt2")
print(runner(torch.randn(1, 16)))
