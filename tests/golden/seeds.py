"""The blocks exactly as the seeds define them in PyTorch, and the other variants of
Shazeer 2020 in the same style. These modules are the ground truth of the golden suite:
ffn must compute what they compute.

Every block is `down(act(gate(x)) * up(x))` (gated) or `down(act(up(x)))` (2-matrix), with
nn.Linear projections named gate / up / down.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d, hidden=None, multiple=256, bias=False):
        super().__init__()
        if hidden is None:
            hidden = int(2 * (4 * d) / 3)
            hidden = multiple * ((hidden + multiple - 1) // multiple)
        self.gate = nn.Linear(d, hidden, bias=bias)
        self.up = nn.Linear(d, hidden, bias=bias)
        self.down = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class GeluMLP(nn.Module):
    def __init__(self, d, hidden=None, bias=False):
        super().__init__()
        hidden = hidden or 4 * d
        self.up = nn.Linear(d, hidden, bias=bias)
        self.down = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class _Gated(nn.Module):
    """Shazeer's gated variants: only the activation on the gate differs from SwiGLU."""

    act = None

    def __init__(self, d, hidden=None, multiple=256, bias=False):
        super().__init__()
        if hidden is None:
            hidden = int(2 * (4 * d) / 3)
            hidden = multiple * ((hidden + multiple - 1) // multiple)
        self.gate = nn.Linear(d, hidden, bias=bias)
        self.up = nn.Linear(d, hidden, bias=bias)
        self.down = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down(type(self).act(self.gate(x)) * self.up(x))


class GLU(_Gated):
    act = staticmethod(torch.sigmoid)


class Bilinear(_Gated):
    act = staticmethod(lambda z: z)


class ReGLU(_Gated):
    act = staticmethod(F.relu)


class GEGLU(_Gated):
    act = staticmethod(F.gelu)


class GatedGeluTanh(_Gated):
    """T5 v1.1's gated GELU, with the tanh approximation (HF 'gelu_new')."""

    act = staticmethod(lambda z: F.gelu(z, approximate="tanh"))


class _TwoMatrix(nn.Module):
    act = None

    def __init__(self, d, hidden=None, bias=False):
        super().__init__()
        hidden = hidden or 4 * d
        self.up = nn.Linear(d, hidden, bias=bias)
        self.down = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down(type(self).act(self.up(x)))


class ReluMLP(_TwoMatrix):
    act = staticmethod(F.relu)


class GeluTanhMLP(_TwoMatrix):
    """GPT-2's MLP activation."""

    act = staticmethod(lambda z: F.gelu(z, approximate="tanh"))


class SwishMLP(_TwoMatrix):
    act = staticmethod(F.silu)


# ffn's variant name → (module class, gated)
VARIANTS = {
    "relu": (ReluMLP, False),
    "gelu": (GeluMLP, False),
    "gelu_tanh": (GeluTanhMLP, False),
    "swish": (SwishMLP, False),
    "glu": (GLU, True),
    "bilinear": (Bilinear, True),
    "reglu": (ReGLU, True),
    "geglu": (GEGLU, True),
    "swiglu": (SwiGLU, True),
    "gated_gelu_tanh": (GatedGeluTanh, True),
}


def seeds_parameter_printout(d=4096):
    """The seeds' own printout of parameter counts."""
    lines = []
    for name, m in [("GELU MLP", GeluMLP(d)), ("SwiGLU", SwiGLU(d))]:
        lines.append(f"{name:9s} parameters {sum(p.numel() for p in m.parameters()):,}")
    return lines
