# category: graph_break
# about: calling loss.backward() inside a fullgraph=True compiled training step
import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(fullgraph=True)
def train_step(x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for _ in range(2):
    opt.zero_grad()
    print(train_step(torch.randn(4, 8), torch.randn(4, 1)).item())
    opt.step()
