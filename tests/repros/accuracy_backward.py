# category: accuracy
# about: gradients of a compiled model differ from eager (injected relu accuracy bug)
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def loss_fn(w, x):
    return torch.relu(x @ w).sum()


torch.manual_seed(0)
x = torch.randn(4, 8)
w_eager = torch.randn(8, 8, requires_grad=True)
w_compiled = w_eager.detach().clone().requires_grad_()
loss_fn(w_eager, x).backward()
torch.compile(loss_fn)(w_compiled, x).backward()
torch.testing.assert_close(w_compiled.grad, w_eager.grad)
