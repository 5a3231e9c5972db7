# category: aot_autograd_failure
# about: gradient penalty (double backward through a compiled function) is rejected by AOTAutograd's backward
import torch

critic = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
compiled_critic = torch.compile(critic, backend="aot_eager")

x = torch.randn(8, 4, requires_grad=True)
score = compiled_critic(x).sum()
(grad_x,) = torch.autograd.grad(score, x, create_graph=True)
penalty = ((grad_x.norm(2, dim=1) - 1) ** 2).mean()
penalty.backward()
print("penalty", penalty.item())
