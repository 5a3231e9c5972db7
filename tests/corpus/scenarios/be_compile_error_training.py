# category: backend_compiler_failed
# about: injected C++ compile error while compiling a training step (forward + backward) with Inductor
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile
def loss_fn(x):
    return model(x).pow(2).mean()


loss = loss_fn(torch.randn(4, 8))
loss.backward()
opt.step()
