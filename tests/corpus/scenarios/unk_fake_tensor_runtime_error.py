# category: unknown
# about: Dynamo's fake-tensor propagation rejects a matmul (TorchRuntimeError); compiler or user bug is not determinable from the output
import torch


def project(a, b):
    return (a @ b).relu()


print(torch.compile(project)(torch.randn(3, 4), torch.randn(5, 6)))
