"""Hugging Face's activations that ffn runs besides the seeds' (quick_gelu, relu2, relu6)
against PyTorch: transformers' QuickGELUActivation (x * sigmoid(1.702 * x)) and
ReLUSquaredActivation (square(relu(x))) restated from transformers/activations.py, and
torch.nn.ReLU6, in a 2-matrix MLP (act(up(x)), CLIP's and Nemotron's shape) and a gated one
(act(gate(x)) * up(x)), run in float64 with autograd, against ffn.Block, `ffn forward` and
ffn.load on a Hugging Face checkpoint whose config.json names the activation.

Tolerance: the rigorous f32 bounds of bound.forward_and_bound and
test_backward.backward_and_bound (src/block/reference.cpp and reference_backward.cpp,
restated: relu2's Lipschitz constant grows with its argument, relu6's derivative jumps at 0
and 6). The gate and up weights are 10x nn.Linear's so that the pre-activations spread over
about +-7: relu6's limit 6 is crossed by a good share of the units and relu2 is steep. PyTorch's
own float32 result is checked against the same bounds (sound, not tuned to ffn), and each
activation's nearest neighbour in ffn (relu for relu6 and relu2, gelu for quick_gelu, the
function it approximates) is shown to fall far outside them.
"""
import copy
import json

import numpy as np
import pytest
import torch
from torch import nn

import bound
import files
from test_backward import autograd, backward_and_bound, worst_ratio
from test_checkpoints import assert_both_match, run_layer
from test_golden import check_against_module


class QuickGELUActivation(nn.Module):
    """transformers.activations.QuickGELUActivation, restated."""

    def forward(self, input):
        return input * torch.sigmoid(1.702 * input)


class ReLUSquaredActivation(nn.Module):
    """transformers.activations.ReLUSquaredActivation, restated."""

    def forward(self, input):
        relu_applied = nn.functional.relu(input)
        return torch.square(relu_applied)


ACTIVATION_MODULES = {"quick_gelu": QuickGELUActivation, "relu2": ReLUSquaredActivation, "relu6": nn.ReLU6}
NEIGHBOUR = {"quick_gelu": "gelu", "relu2": "relu", "relu6": "relu"}


class Mlp(nn.Module):
    """The seeds' projection names: up, down and (gated) gate."""

    def __init__(self, activation, d, hidden, gated, bias=True):
        super().__init__()
        if gated:
            self.gate = nn.Linear(d, hidden, bias=bias)
        self.up, self.down = nn.Linear(d, hidden, bias=bias), nn.Linear(hidden, d, bias=bias)
        self.act, self.gated = ACTIVATION_MODULES[activation](), gated

    def forward(self, x):
        h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
        return self.down(h)


def make_case(activation, gated, d, hidden, tokens, bias=True, seed=0):
    torch.manual_seed(seed)
    module = Mlp(activation, d, hidden, gated, bias)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if not name.startswith("down"):
                p.mul_(10.0)
    x = (torch.rand(tokens, d) * 2 - 1) * 2
    return module, x, torch.randn(tokens, d)


def variant_of(activation, gated):
    return ("gated_" if gated else "") + activation


def state_of(module):
    return {k: v.double().numpy() for k, v in module.state_dict().items()}


def ffn_block(ffn_module, module, variant):
    d, hidden = module.up.in_features, module.up.out_features
    block = ffn_module.Block(variant, d, hidden, bias=module.up.bias is not None)
    block.load_state_dict(module.state_dict())
    return block


def share_above_six(state, x, gated):
    name = "gate" if gated else "up"
    return (x @ state[f"{name}.weight"].T + state[f"{name}.bias"] > 6.0).mean()


CASES = [(a, g) for a in ACTIVATION_MODULES for g in (False, True)]


@pytest.mark.parametrize("activation,gated", CASES)
def test_forward_matches_torch(ffn_module, activation, gated):
    module, x, _ = make_case(activation, gated, 33, 171, 17)
    state, x64 = state_of(module), x.double().numpy()
    assert share_above_six(state, x64, gated) > 0.05
    y_exact, err = bound.forward_and_bound(state, x64, activation, gated)
    with torch.no_grad():
        want = copy.deepcopy(module).double()(x.double()).numpy()
        torch32 = module(x).numpy()
    np.testing.assert_allclose(y_exact, want, rtol=1e-10, atol=1e-12)  # the NumPy formula is the module's
    assert np.max(np.abs(torch32 - y_exact) / err) <= 1.0
    variant = variant_of(activation, gated)
    block = ffn_block(ffn_module, module, variant)
    assert block.variant == variant and block.activation == activation and block.gated == gated
    for got in (block(x.numpy()), block.for_inference("f32")(x.numpy())):
        ratio = np.abs(got.astype(np.float64) - y_exact) / err
        assert np.all(np.isfinite(ratio)) and ratio.max() <= 1.0, ratio.max()
    # The nearest activation ffn has, on the same weights, is far outside the bound.
    other = ffn_block(ffn_module, module, variant_of(NEIGHBOUR[activation], gated))
    assert np.max(np.abs(other(x.numpy()) - y_exact) / err) > 10.0


@pytest.mark.parametrize("activation,gated", CASES)
def test_backward_matches_autograd(ffn_module, activation, gated):
    module, x, dy = make_case(activation, gated, 24, 40, 9)
    exact, err = backward_and_bound(state_of(module), x.double().numpy(), dy.double().numpy(), activation, gated)
    want = autograd(copy.deepcopy(module).double(), x.double(), dy.double())
    for name, w in want.items():  # the NumPy restatement is autograd's, to float64 rounding
        np.testing.assert_allclose(exact[name], w, rtol=1e-9, atol=1e-12, err_msg=name)
    assert worst_ratio(autograd(module, x, dy), want, err)[0] <= 1.0  # torch's f32 within the bound
    block = ffn_block(ffn_module, module, variant_of(activation, gated))
    for recompute in (False, True):
        got = block.backward(x.numpy(), dy.numpy(), recompute=recompute)
        assert set(got) == set(want)
        worst, where = worst_ratio(got, want, err)
        assert worst <= 1.0, f"{where} off by {worst:.3g} bounds"


@pytest.mark.parametrize("activation", list(ACTIVATION_MODULES))
def test_cli_forward_with_the_variant(tmp_path, run_ffn, activation):
    """`ffn forward --variant <act>` and `--variant gated_<act>` on the seeds' names."""
    for gated in (False, True):
        module, x, _ = make_case(activation, gated, 7, 13, 5)
        check_against_module(tmp_path, run_ffn, module, gated, variant_of(activation, gated), x)


@pytest.mark.parametrize("activation", list(ACTIVATION_MODULES))
def test_hugging_face_checkpoint_names_its_activation(tmp_path, run_ffn, ffn_module, activation):
    """A Llama-named checkpoint whose config.json's hidden_act is the activation: `ffn forward`
    and ffn.load read it from there, no --variant given."""
    module, x, _ = make_case(activation, True, 16, 40, 3, bias=False)
    tensors = {f"model.layers.0.mlp.{k.split('.')[0]}_proj.weight": v for k, v in module.state_dict().items()}
    files.write_safetensors(tmp_path / "model.safetensors", tensors, metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": activation}))
    y = run_layer(tmp_path, run_ffn, tmp_path, 0, x)
    assert_both_match(ffn_module, module, True, variant_of(activation, True), x, y, tmp_path, 0)


def test_a_refused_name_says_why(tmp_path, run_ffn, ffn_module):
    """gelu_10 is an ACT2FN key ffn does not run: refused by name, with the reason in Python."""
    module, _, _ = make_case("relu2", True, 16, 40, 1, bias=False)
    tensors = {f"model.layers.0.mlp.{k.split('.')[0]}_proj.weight": v for k, v in module.state_dict().items()}
    files.write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "gelu_10"}))
    with pytest.raises(ffn_module.Error, match="gelu_10"):
        ffn_module.load(tmp_path)
    from ffn import _core

    assert _core.hf_activation("relu2") == "relu2" and _core.hf_activation("gelu_10") is None
    assert "[-10, 10]" in _core.hf_activation_refusal("gelu_10")
    assert _core.hf_activation_refusal("relu2") == "" and _core.hf_activation_refusal("nonsense") == ""


def test_torch_patch_recognises_the_classes(ffn_module):
    """ffn.torch.patch replaces a Hugging Face MLP whose act_fn is one of these classes."""
    import ffn.torch

    class LlamaStyleMLP(nn.Module):
        def __init__(self, act, d=32, hidden=64):
            super().__init__()
            self.gate_proj, self.up_proj = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.down_proj, self.act_fn = nn.Linear(hidden, d, bias=False), act

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    torch.manual_seed(0)
    model = nn.ModuleDict({a: LlamaStyleMLP(cls()) for a, cls in ACTIVATION_MODULES.items()}).eval()
    report = ffn.torch.patch(model, dtype="f32")
    assert {e.name: e.variant for e in report.replaced} == {a: "gated_" + a for a in ACTIVATION_MODULES}, str(report)
