# category: aot_autograd_failure
# about: the joint-graph partitioner fails while compiling a training step (simulated partitioner bug)
import torch
import torch._functorch.partitioners as partitioners


def broken_partition(joint_module, _joint_inputs, **kwargs):
    raise AssertionError("partitioner: saved value has no producer in the forward graph")


partitioners.min_cut_rematerialization_partition = broken_partition
partitioners.default_partition = broken_partition

model = torch.nn.Linear(8, 8)
out = torch.compile(model, backend="aot_eager")(torch.randn(2, 8))
out.sum().backward()
