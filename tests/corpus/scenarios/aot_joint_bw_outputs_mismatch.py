# category: aot_autograd_failure
# about: the joint graph's backward outputs are miscounted during partitioning (simulated); AOTAutograd asserts
import torch
import torch._functorch.partitioners as partitioners

_original_extract = partitioners._extract_fwd_bwd_outputs


def _extract_fwd_bwd_outputs(joint_module, *, num_fwd_outputs):
    fwd, bwd, fwd_descs, bwd_descs = _original_extract(joint_module, num_fwd_outputs=num_fwd_outputs)
    return fwd, bwd[:-1], fwd_descs, bwd_descs[:-1]  # simulated off-by-one


partitioners._extract_fwd_bwd_outputs = _extract_fwd_bwd_outputs

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.SiLU(), torch.nn.Linear(8, 1))
loss = torch.compile(model, backend="aot_eager")(torch.randn(4, 8)).mean()
loss.backward()
