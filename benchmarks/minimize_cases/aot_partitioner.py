# category: aot_autograd_failure
# about: a training step whose joint graph is partitioned with an off-by-one in the backward outputs (simulated bug)
import torch
import torch.nn as nn
import torch._functorch.partitioners as partitioners

_original_extract = partitioners._extract_fwd_bwd_outputs


def _extract_fwd_bwd_outputs(joint_module, *, num_fwd_outputs):
    fwd, bwd, fwd_descs, bwd_descs = _original_extract(joint_module, num_fwd_outputs=num_fwd_outputs)
    return fwd, bwd[:-1], fwd_descs, bwd_descs[:-1]


partitioners._extract_fwd_bwd_outputs = _extract_fwd_bwd_outputs


class Autoencoder(nn.Module):
    def __init__(self, dim=20, code=6):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 12), nn.SiLU(), nn.Linear(12, code))
        self.decoder = nn.Sequential(nn.Linear(code, 12), nn.SiLU(), nn.Linear(12, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def train_step(model, opt, batch):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(batch), batch)
    loss.backward()
    opt.step()
    return loss.detach()


torch.manual_seed(0)
model = Autoencoder()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
compiled = torch.compile(model, backend="aot_eager")
for epoch in range(2):
    print(epoch, train_step(compiled, opt, torch.randn(8, 20)).item())
