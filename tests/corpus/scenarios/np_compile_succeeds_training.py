# category: not_pt2
# about: a compiled training loop that works and prints its losses
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
compiled = torch.compile(model)
x = torch.randn(64, 4)
y = x.sum(-1, keepdim=True)
for epoch in range(5):
    loss = torch.nn.functional.mse_loss(compiled(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
print("training finished")
