# category: not_pt2
# about: a plain shape bug in the user's matmul surfaces as Dynamo's TorchRuntimeError from fake-tensor propagation; eager fails the same way
# corpus: skip (known miss: the rules call it unknown by fake_tensor_run_failed; the error is the user's, eager raises it too)
import torch


def project(a, b):
    return (a @ b).relu()


print(torch.compile(project)(torch.randn(3, 4), torch.randn(5, 6)))
