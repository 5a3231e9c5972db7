# category: accuracy
# about: gradients of a compiled training step differ from eager gradients (injected relu accuracy bug)
import copy

import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)

eager_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
compiled_model = torch.compile(copy.deepcopy(eager_model))
x, y = torch.randn(16, 8), torch.randn(16, 1)

for model in (eager_model, compiled_model):
    torch.nn.functional.mse_loss(model(x), y).backward()

for (name, p_eager), p_compiled in zip(eager_model.named_parameters(), compiled_model.parameters()):
    print(name, "max grad diff", (p_eager.grad - p_compiled.grad).abs().max().item())
for p_eager, p_compiled in zip(eager_model.parameters(), compiled_model.parameters()):
    torch.testing.assert_close(p_compiled.grad, p_eager.grad)
