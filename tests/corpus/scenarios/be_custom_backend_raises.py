# category: backend_compiler_failed
# about: a user-registered torch.compile backend raises while compiling the captured FX graph
import torch
from torch._dynamo import register_backend


@register_backend
def fused_cpu(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and "layer_norm" in str(node.target):
            raise NotImplementedError(f"fused_cpu: no kernel for {node.target}")
    return gm.forward


model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
print(torch.compile(model, backend="fused_cpu")(torch.randn(2, 8)))
