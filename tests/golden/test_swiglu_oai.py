"""gpt-oss's experts (swiglu_oai) against PyTorch: one expert of Hugging Face's GptOssExperts
restated as a torch module — gate and up projections with biases, the gate clamped from
above at swiglu_limit = 7 and the up value to [-7, 7], glu = gate * sigmoid(1.702 * gate),
h = (up + 1) * glu, the down projection with its bias — run in float64 with autograd,
against ffn.Block("swiglu_oai", ...). The forward must lie within bound.forward_and_bound
and every gradient within test_backward.backward_and_bound (the derivations of
src/block/reference.cpp and reference_backward.cpp, with the clamps' terms), at weights
scaled so that a good share of the gates lie above 7 and of the ups beyond +-7. PyTorch's
own float32 result is checked against the same bounds (they are sound, not tuned to ffn),
and the unclamped or unshifted formula is shown to fall far outside them.
"""
import copy

import numpy as np
import pytest
import torch

import bound
from test_backward import autograd, backward_and_bound, worst_ratio


class OaiExpert(torch.nn.Module):
    """One gpt-oss expert with the seeds' projection names (gate, up, down)."""

    def __init__(self, d, hidden, alpha=1.702, limit=7.0):
        super().__init__()
        self.gate = torch.nn.Linear(d, hidden)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)
        self.alpha, self.limit = alpha, limit

    def forward(self, x, clamp=True, shift=1.0):
        gate, up = self.gate(x), self.up(x)
        if clamp:
            gate = gate.clamp(min=None, max=self.limit)
            up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        return self.down((up + shift) * glu)


def make_case(d, hidden, tokens, seed=0):
    """An expert whose gate and up weights and biases are 10x nn.Linear's (their
    pre-activations spread over about +-7 at x in +-2), x and dy."""
    torch.manual_seed(seed)
    module = OaiExpert(d, hidden)
    with torch.no_grad():
        for p in (module.gate.weight, module.gate.bias, module.up.weight, module.up.bias):
            p.mul_(10.0)
    x = (torch.rand(tokens, d) * 2 - 1) * 2
    dy = torch.randn(tokens, d)
    return module, x, dy


def ffn_block(ffn_module, module):
    d, hidden = module.gate.in_features, module.gate.out_features
    block = ffn_module.Block("swiglu_oai", d, hidden, bias=True)
    block.load_state_dict(module.state_dict())
    return block


def clamp_shares(state, x):
    g = x @ state["gate.weight"].T + state["gate.bias"]
    u = x @ state["up.weight"].T + state["up.bias"]
    return (g > bound.OAI_LIMIT).mean(), (np.abs(u) > bound.OAI_LIMIT).mean()


SHAPES = [(33, 171, 17), (64, 96, 5), (7, 13, 1)]


@pytest.mark.parametrize("d,hidden,tokens", SHAPES)
def test_forward_matches_torch(ffn_module, d, hidden, tokens):
    module, x, _ = make_case(d, hidden, tokens)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    x64 = x.double().numpy()
    if tokens > 1:
        gate_share, up_share = clamp_shares(state, x64)
        assert gate_share > 0.05 and up_share > 0.1, (gate_share, up_share)
    y_exact, err = bound.forward_and_bound(state, x64, "clamped_swish", True)
    with torch.no_grad():
        want = copy.deepcopy(module).double()(x.double()).numpy()
        torch32 = module(x).numpy()
    np.testing.assert_allclose(y_exact, want, rtol=1e-10, atol=1e-12)  # the NumPy formula is torch's
    assert np.max(np.abs(torch32 - y_exact) / err) <= 1.0
    block = ffn_block(ffn_module, module)
    assert block.variant == "swiglu_oai" and block.activation == "clamped_swish"
    got = block(x.numpy())
    ratio = np.abs(got.astype(np.float64) - y_exact) / err
    assert np.all(np.isfinite(ratio)) and ratio.max() <= 1.0, ratio.max()
    fast = block.for_inference("f32")(x.numpy())  # the inference path, f32 panels: the same bound
    assert (np.abs(fast.astype(np.float64) - y_exact) / err).max() <= 1.0


@pytest.mark.parametrize("recompute", [False, True])
@pytest.mark.parametrize("d,hidden,tokens", SHAPES)
def test_backward_matches_autograd(ffn_module, d, hidden, tokens, recompute):
    module, x, dy = make_case(d, hidden, tokens)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    exact, err = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), "clamped_swish", True)
    want = autograd(copy.deepcopy(module).double(), x.double(), dy.double())
    for name, w in want.items():  # the NumPy restatement is autograd's, to float64 rounding
        np.testing.assert_allclose(exact[name], w, rtol=1e-9, atol=1e-12, err_msg=name)
    assert worst_ratio(autograd(module, x, dy), want, err)[0] <= 1.0  # torch's f32 within the bound
    got = ffn_block(ffn_module, module).backward(x.numpy(), dy.numpy(), recompute=recompute)
    assert set(got) == set(want)
    worst, where = worst_ratio(got, want, err)
    assert worst <= 1.0, f"{where} off by {worst:.3g} bounds"


def test_autograd_passes_the_gradient_at_the_limits():
    """The rule ffn's backward follows (activation_tiles.hpp): torch.clamp's gradient is 1 at
    the limits themselves and 0 beyond them."""
    z = torch.tensor([7.0, 7.0000005, -7.0, -7.0000005, 6.5], requires_grad=True)
    z.clamp(min=-7.0, max=7.0).sum().backward()
    assert z.grad.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    z.grad = None
    z.clamp(min=None, max=7.0).sum().backward()
    assert z.grad.tolist() == [1.0, 0.0, 1.0, 1.0, 1.0]


def test_the_bounds_catch_a_missing_clamp_or_shift(ffn_module):
    module, x, dy = make_case(33, 171, 17)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    y_exact, err = bound.forward_and_bound(state, x.double().numpy(), "clamped_swish", True)
    m64 = copy.deepcopy(module).double()
    with torch.no_grad():
        for wrong in (dict(clamp=False), dict(shift=0.0)):
            y = m64(x.double(), **wrong).numpy()
            assert np.max(np.abs(y - y_exact) / err) > 10.0, wrong
    # swiglu (no clamps, no shift) on the same weights is far from swiglu_oai too.
    swiglu = ffn_module.Block("swiglu", 33, 171, bias=True)
    swiglu.load_state_dict(module.state_dict())
    assert np.max(np.abs(swiglu(x.numpy()) - y_exact) / err) > 10.0
    # A backward that ignored the clamps (gradients through them as if absent).
    exact, err_b = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), "clamped_swish", True)
    xw = x.double().clone().requires_grad_(True)
    m64.zero_grad()
    m64(xw, clamp=False).backward(dy.double())
    assert np.max(np.abs(xw.grad.numpy() - exact["x"]) / err_b["x"]) > 10.0


def test_variant_names_and_the_gated_only_rule(ffn_module):
    assert ffn_module.Block("gated_clamped_swish", 8, 16).variant == "swiglu_oai"
    with pytest.raises(ffn_module.Error, match="variant.gated"):
        ffn_module.Block("clamped_swish", 8, 16)
