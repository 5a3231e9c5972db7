# category: aot_autograd_failure
# about: a WGAN-GP critic compiled for training; the gradient penalty backprops through autograd.grad(create_graph=True)
# history: written 2026-11-28 as a held-out case, after the reducer change of that day (dead-code pass after each pass that progressed); the reducer changes since were made with its results in view, so it is no longer held out
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GANConfig:
    latent: int = 16
    data_dim: int = 8
    hidden: int = 64
    batch: int = 32
    critic_iters: int = 2
    gp_weight: float = 10.0
    lr: float = 1e-4
    steps: int = 3


def make_generator(cfg):
    return nn.Sequential(nn.Linear(cfg.latent, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.data_dim))


class Critic(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(cfg.data_dim, cfg.hidden), nn.Linear(cfg.hidden, cfg.hidden)])
        self.out = nn.Linear(cfg.hidden, 1)

    def forward(self, x):
        for layer in self.layers:
            x = F.leaky_relu(layer(x), 0.2)
        return self.out(x).squeeze(-1)


def real_batch(cfg):
    angle = torch.rand(cfg.batch, 1) * 2 * torch.pi
    ring = torch.cat([angle.cos(), angle.sin()], dim=1).repeat(1, cfg.data_dim // 2)
    return ring + 0.05 * torch.randn(cfg.batch, cfg.data_dim)


def gradient_penalty(critic, real, fake):
    eps = torch.rand(real.size(0), 1)
    mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)
    grads, = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def main():
    cfg = GANConfig()
    torch.manual_seed(0)
    gen, critic = make_generator(cfg), Critic(cfg)
    critic_c = torch.compile(critic, backend="aot_eager")  # inductor fails the same way
    opt_g = torch.optim.Adam(gen.parameters(), lr=cfg.lr, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=cfg.lr, betas=(0.5, 0.9))
    for step in range(cfg.steps):
        for _ in range(cfg.critic_iters):
            real, fake = real_batch(cfg), gen(torch.randn(cfg.batch, cfg.latent)).detach()
            gp = gradient_penalty(critic_c, real, fake)
            loss_c = critic_c(fake).mean() - critic_c(real).mean() + cfg.gp_weight * gp
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
        loss_g = -critic_c(gen(torch.randn(cfg.batch, cfg.latent))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        print(f"step {step}: critic {loss_c.item():.4f} gp {gp.item():.4f} gen {loss_g.item():.4f}")


if __name__ == "__main__":
    main()
