# category: not_pt2
# about: an eager training loop with a mis-sized Linear layer (mat1 and mat2 shapes cannot be multiplied)
import torch

model = torch.nn.Sequential(
    torch.nn.Flatten(),
    torch.nn.Linear(28 * 28, 128),
    torch.nn.ReLU(),
    torch.nn.Linear(256, 10),
)
opt = torch.optim.Adam(model.parameters())
for step in range(3):
    images, labels = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
