# SPDX-License-Identifier: GPL-3.0-or-later
"""Models for the PyTorch import's test (tests/torch/torch_import.py): `nnstudio-cli import
tests/torch/import/models.py:Containers out.nns --input 3,8,8`."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mixer(nn.Module):
    """A custom block with a Parameter, used twice with one structure (one block definition)."""

    def __init__(self, d):
        super().__init__()
        self.gain = nn.Parameter(torch.randn(d))
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return F.relu(self.fc(x)) * self.gain + x


class Containers(nn.Module):
    """Every container kind, a custom block, a Parameter and a buffer, and the functional
    calls the import folds or makes nodes of: mean, -, / 2, view with x.size(0), transpose,
    flatten, a slice, torch.cat."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.blocks = nn.ModuleList([Mixer(8), Mixer(8)])
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 4), "b": nn.Linear(8, 4)})
        self.scale = nn.Parameter(torch.randn(4))
        self.register_buffer("offset", torch.randn(4))

    def forward(self, x):
        h = self.stem(x).mean((2, 3))
        for block in self.blocks:
            h = block(h)
        y = self.heads["a"](h) - self.heads["b"](h) / 2
        y = y * self.scale + self.offset
        b, c = h.size()
        z = h.view(b, 2, c // 2).transpose(1, 2).flatten(1)[:, 2:6]
        return torch.cat([y, z], 1)


class Branchy(nn.Module):
    """Data-dependent control flow: refused."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return x


class Unknown(nn.Module):
    """An op NN Studio has no node for: refused."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.fc(x), 1)


class Encoder(nn.Module):
    """nn.TransformerEncoder (a known container: its forward is not traceable) with a final
    norm, between two Linear layers, and x[:, 0]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 16)
        layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x))[:, 0])


class Stack(nn.Module):
    """A Transformer as papers draw it: six equal encoder layers in a Sequential between an
    embedding and a head (the window opens it with the six folded into one box x6)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 32)
        self.layers = nn.Sequential(*[
            nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
            for _ in range(6)])
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.norm(self.layers(self.embed(x)))[:, 0])


class LayerNorm(nn.Module):
    """A user's own class with torch.nn's name and other math (it centres, it does not scale):
    a custom block, not NN Studio's LayerNorm."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return (x - x.mean(-1, keepdim=True)) * self.weight


class Projection(nn.Linear):
    """A subclass of a torch.nn class that keeps its forward: that class's node."""


class OwnClasses(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Projection(6, 8)
        self.norm = LayerNorm(8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.norm(self.proj(x)))


class MaskedEncoder(nn.Module):
    """nn.TransformerEncoder given a causal mask: refused (the import's loop takes none)."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.register_buffer("causal", torch.triu(torch.full((3, 3), float("-inf")), 1))

    def forward(self, x):
        return self.encoder(x, mask=self.causal)


def small_vit():
    """A small torchvision VisionTransformer whose head is not zero (torchvision zeroes it, which
    would make every output 0 and any comparison pass)."""
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=4,
                              hidden_dim=64, mlp_dim=128)
    nn.init.normal_(model.heads.head.weight)
    nn.init.normal_(model.heads.head.bias)
    return model
