"""ffn.torch: ffn's blocks as torch modules (forward and backward by ffn's kernels, inside
autograd), state_dict compatibility with the seeds' modules, and ffn.torch.patch on a small
Llama-shaped model written here (embedding, RMSNorm, causal attention, the seeds' SwiGLU MLP,
LM head) and on GPT-2's MLP shape.

Tolerances, each the project's contract for what is compared:
- gradients: test_backward.backward_and_bound, the rigorous f32 bound of a backward
  (src/block/reference_backward.cpp's derivation; PyTorch's own f32 autograd is inside it too),
  against the seeds' module's autograd in float64 on the same weights, input and upstream
  gradient;
- each patched MLP's output inside the model: the README's contract of its weight type against
  the float64 oracle on the weights rounded to the type (f32 and bf16: bound.forward_and_bound,
  with the bf16 operands' rounding on avx512_bf16; q8_0, q4_0: that plus the activations'
  q8_0 quantisation propagated, as the README states it);
- the logits of the patched model against the unpatched model on the same rounded weights: a
  relative RMS budget per type (the per-call contract carried through attention and norms is
  not a rigorous bound), with the measured figures beside each budget.
"""
import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import bound
import quant_ref
import seeds
from test_backward import ACTIVATION_OF, backward_and_bound, worst_ratio


@pytest.fixture(scope="module")
def fft(ffn_module):
    import ffn.torch

    return ffn.torch


GATED = [v for v, (_, g) in seeds.VARIANTS.items() if g]


def make_pair(fft, variant, d, hidden, bias, seed=0, **options):
    """The seeds' module and the ffn.torch module from the same torch generator state."""
    cls = seeds.VARIANTS[variant][0]
    torch.manual_seed(seed)
    theirs = cls(d, hidden=hidden, bias=bias)
    torch.manual_seed(seed)
    ours = getattr(fft, cls.__name__)(d, hidden=hidden, bias=bias, **options)
    return theirs, ours


@pytest.mark.parametrize("recompute", [False, True])
@pytest.mark.parametrize("variant", list(seeds.VARIANTS))
@pytest.mark.parametrize("d,hidden,shape,bias", [(1, 3, (5,), True), (7, 13, (2, 3), False), (33, 171, (3, 11), True),
                                                 (64, 100, (1,), False)])
def test_gradients_match_the_seeds_module(fft, variant, d, hidden, shape, bias, recompute):
    """x of shape [*shape, d] (leading dimensions as a model has them): ffn's dx and every dW, db
    through torch's autograd, within the backward bound of autograd's float64 gradients."""
    theirs, ours = make_pair(fft, variant, d, hidden, bias, recompute=recompute)
    # nn.Linear's initialisation from the same generator: the same weights, bit for bit.
    for (n1, p1), (n2, p2) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert n1 == n2 and torch.equal(p1, p2), n1
    torch.manual_seed(1)
    x = torch.randn(*shape, d) * 2
    dy = torch.randn(*shape, d)
    xg = x.clone().requires_grad_(True)
    y = ours(xg)
    assert y.shape == x.shape and y.dtype == torch.float32
    y.backward(dy)
    got = {"x": xg.grad.reshape(-1, d).numpy()}
    got.update({n: p.grad.numpy() for n, p in ours.named_parameters()})

    ref = copy.deepcopy(theirs).double()
    x64 = x.double().reshape(-1, d).requires_grad_(True)
    ref(x64).backward(dy.double().reshape(-1, d))
    want = {"x": x64.grad.numpy()}
    want.update({n: p.grad.numpy() for n, p in ref.named_parameters()})
    state = {k: v.double().numpy() for k, v in theirs.state_dict().items()}
    _, err = backward_and_bound(state, x.double().reshape(-1, d).numpy(), dy.double().reshape(-1, d).numpy(),
                                ACTIVATION_OF[variant], seeds.VARIANTS[variant][1])
    worst, where = worst_ratio(got, want, err)
    assert worst <= 1.0, f"{variant}: {where} off by {worst:.3g} bounds"
    # And the forward within the forward bound.
    y_exact, yerr = bound.forward_and_bound(state, x.double().reshape(-1, d).numpy(), ACTIVATION_OF[variant],
                                            seeds.VARIANTS[variant][1])
    assert np.all(np.abs(y.detach().reshape(-1, d).double().numpy() - y_exact) <= yerr)


def test_state_dict_round_trips(fft):
    theirs, ours = make_pair(fft, "swiglu", 16, 40, True)
    with torch.no_grad():
        for p in theirs.parameters():
            p.normal_()
    ours.load_state_dict(theirs.state_dict())  # seeds → ffn.torch
    assert list(ours.state_dict()) == list(theirs.state_dict())
    back = seeds.SwiGLU(16, hidden=40, bias=True)
    back.load_state_dict(ours.state_dict())  # ffn.torch → seeds
    x = torch.randn(3, 16)
    for k, v in back.state_dict().items():
        assert torch.equal(v, theirs.state_dict()[k]), k
    with torch.no_grad():
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    # 2-matrix blocks: up and down only, as the seeds have them.
    theirs2, ours2 = make_pair(fft, "gelu", 8, None, False)
    assert list(ours2.state_dict()) == ["up.weight", "down.weight"] and ours2.hidden == 32
    ours2.load_state_dict(theirs2.state_dict())


def test_parameters_are_the_blocks_weights(fft):
    """No copies: an in-place update of a parameter is what ffn's next forward uses; a
    replaced storage (deepcopy, p.data = …) is copied back into the block at the next forward."""
    theirs, ours = make_pair(fft, "swiglu", 16, 32, False)
    x = torch.randn(4, 16)
    assert ours.gate.weight.data_ptr() == ours._ffn.views["gate.weight"].data_ptr()
    assert isinstance(ours.gate, nn.Linear)  # a projection reads as nn.Linear does
    with torch.no_grad():
        ours.down.weight.mul_(2)
        theirs.down.weight.mul_(2)
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
        twin = copy.deepcopy(ours)
        np.testing.assert_allclose(twin(x).numpy(), ours(x).numpy(), rtol=0, atol=0)
        twin.up.weight.data = torch.zeros(32, 16)
        assert torch.count_nonzero(twin(x)) == 0
        assert twin.up.weight.data_ptr() == twin._ffn.views["up.weight"].data_ptr()
        assert torch.count_nonzero(ours(x)) > 0  # the original is untouched


def test_tensors_it_takes(fft):
    theirs, ours = make_pair(fft, "geglu", 8, 24, True)
    x = torch.randn(8, 5).t()  # not contiguous: copied
    assert not x.is_contiguous()
    with torch.no_grad():
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
        y16 = ours(x.bfloat16())  # bf16 in, bf16 out (computed in f32)
        assert y16.dtype == torch.bfloat16
        assert ours(torch.empty(0, 8)).shape == (0, 8)
    with pytest.raises(ValueError, match="CPU tensors"):
        ours(torch.empty(2, 8, device="meta"))
    with pytest.raises(ValueError, match=r"\[\.\.\., 8\]"):
        ours(torch.zeros(2, 9))
    with pytest.raises(ValueError, match="float32 CPU parameters"):
        ours.double()(x.double())
    fast = fft.SwiGLU(32, hidden=64).for_inference("q8_0")
    assert fast.types == {"gate": "q8_0", "up": "q8_0", "down": "q8_0"} and list(fast.state_dict()) == []
    xr = torch.randn(2, 32, requires_grad=True)
    with pytest.raises(ValueError, match="no backward"):
        fast(xr).sum().backward()
    assert copy.deepcopy(fast).block is fast.block  # read-only after it is made: copies share it


# ---- the Llama-shaped model ----

class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = (p(x).view(B, T, self.heads, D // self.heads).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.heads)
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")).softmax(-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, D))


class Layer(nn.Module):
    def __init__(self, d, heads, multiple):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.self_attn = Attention(d, heads)
        self.mlp = seeds.SwiGLU(d, multiple=multiple)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyLlama(nn.Module):
    def __init__(self, vocab=96, d=64, layers=2, heads=4, multiple=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, heads, multiple) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def tiny_llama(seed=0, **shape):
    torch.manual_seed(seed)
    return TinyLlama(**shape)


def _q8_0_error(a):
    """Per element of a [T, n] (n % 32 == 0): the README's bound on its q8_0 quantisation error,
    e(a) = a/254 + 127·max(2⁻¹¹·a/127, 2⁻²⁵), a the block's largest magnitude."""
    T, n = a.shape
    amax = np.abs(a).reshape(T, n // 32, 32).max(axis=2)
    return np.repeat(amax / 254 + 127 * np.maximum(2.0**-11 * amax / 127, 2.0**-25), 32, axis=1)


def contract_bound(state, x, dtype, bf16_dot):
    """(y_exact, bound) of one swiglu MLP call on the weights rounded to `dtype`: the README's contract."""
    operand = 2.0**-8 if dtype == "bf16" and bf16_dot else 0.0
    y, err = bound.forward_and_bound(state, x, "swish", True, operand)
    if dtype in ("q8_0", "q4_0"):
        ex = _q8_0_error(x)
        wg, wu, wd = state["gate.weight"], state["up.weight"], state["down.weight"]
        g, u = x @ wg.T, x @ wu.T
        dg, du = ex @ np.abs(wg).T, ex @ np.abs(wu).T
        dh = bound.LIPSCHITZ * dg * (np.abs(u) + du) + np.maximum(np.abs(g), 1.0) * du
        h = bound.ACTIVATIONS["swish"](g) * u
        err = err + (dh + _q8_0_error(np.abs(h) + dh)) @ np.abs(wd).T
    return y, err


ROUND = {"f32": lambda w: w, "bf16": lambda w: torch.from_numpy(w).bfloat16().float().numpy(),
         "q8_0": quant_ref.q8_0_roundtrip, "q4_0": quant_ref.q4_0_roundtrip}
# Relative RMS of the logits against the unpatched model on the same rounded weights; measured
# on this model (seed 0): f32 1.4e-7; bf16 1.5e-7 (f32 products) or 4.2e-4 (avx512_bf16 operands);
# q8_0 1.7e-3, q4_0 1.6e-3 — the activations' 8-bit quantisation (q4_0 against the unrounded f32
# weights: 1.6e-2).
LOGIT_BUDGET = {"f32": 1e-5, "bf16": 5e-3, "q8_0": 1e-2, "q4_0": 1e-2}


def _k_quant_roundtrip(name):
    def roundtrip(w):
        import ffn
        return ffn.dequantize(ffn.quantize(w, name.lower()).tobytes(), name.lower(), w.size).reshape(w.shape)
    return roundtrip


@pytest.mark.parametrize("types", [("q4_K", "q4_K", "q4_K"), ("q4_K", "q4_K", "q6_K"), ("q5_K", "q5_K", "q5_K")])
def test_patched_llama_in_k_quants(fft, ffn_module, types):
    """The K-quants (rows of whole 256-blocks: a model 256 wide, hidden 512) and llama.cpp's
    Q4_K_M mix: every MLP call within the contract (the f32 bound plus the activations' q8_K
    term, bound.quantisation_bound) and the logits within 1e-2 relative RMS of the unpatched
    model on the same rounded weights (measured 2.6e-3: the activations' 8-bit quantisation)."""
    model = tiny_llama(d=256, multiple=512)
    rounding = [_k_quant_roundtrip(t) for t in types]
    with torch.no_grad():
        for layer in model.layers:
            for p, r in zip((layer.mlp.gate, layer.mlp.up, layer.mlp.down), rounding):
                p.weight.copy_(torch.from_numpy(r(p.weight.numpy())))
    patched = copy.deepcopy(model)
    report = fft.patch(patched, gate=types[0], up=types[1], down=types[2])
    assert [e.name for e in report.replaced] == ["layers.0.mlp", "layers.1.mlp"] and not report.left, str(report)
    calls = []
    for i, layer in enumerate(patched.layers):
        layer.mlp.register_forward_hook(lambda m, inp, out, i=i: calls.append((i, inp[0].detach(), out.detach())))
    tokens = torch.randint(0, 96, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want, got = model(tokens), patched(tokens)
    for i, x, y in calls:
        state = {k: v.double().numpy() for k, v in model.layers[i].mlp.state_dict().items()}
        x64 = x.reshape(-1, 256).double().numpy()
        y_exact, err = bound.forward_and_bound(state, x64, "swish", True)
        err = err + bound.quantisation_bound(state, x64, "swish", True, 256, 256)
        assert np.all(np.abs(y.reshape(-1, 256).double().numpy() - y_exact) <= err), (types, i)
    rel = float((got - want).pow(2).mean().sqrt() / want.pow(2).mean().sqrt())
    assert rel <= 1e-2, (types, rel)  # measured 2.6e-3 (seed 0): the activations' q8_K quantisation


@pytest.mark.parametrize("dtype", ["f32", "bf16", "q8_0", "q4_0"])
def test_patched_llama_logits(fft, ffn_module, dtype):
    model = tiny_llama()
    with torch.no_grad():  # the unpatched model on the weights the type holds
        for layer in model.layers:
            for p in (layer.mlp.gate, layer.mlp.up, layer.mlp.down):
                p.weight.copy_(torch.from_numpy(ROUND[dtype](p.weight.numpy())))
    patched = copy.deepcopy(model)
    report = fft.patch(patched, dtype=dtype)
    assert [e.name for e in report.replaced] == ["layers.0.mlp", "layers.1.mlp"] and not report.left, str(report)
    assert all(e.types == dtype and e.variant == "swiglu" for e in report.replaced)
    assert isinstance(patched.layers[0].mlp, fft.InferenceMLP) and "replaced 2 MLPs" in str(report)
    calls = []
    for i, layer in enumerate(patched.layers):
        layer.mlp.register_forward_hook(lambda m, inp, out, i=i: calls.append((i, inp[0].detach(), out.detach())))
    tokens = torch.randint(0, 96, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want, got = model(tokens), patched(tokens)
    bf16_dot = ffn_module.active_isa() == "avx512_bf16"
    for i, x, y in calls:  # every MLP call within its type's contract
        state = {k: v.double().numpy() for k, v in model.layers[i].mlp.state_dict().items()}
        y_exact, err = contract_bound(state, x.reshape(-1, 64).double().numpy(), dtype, bf16_dot)
        assert np.all(np.abs(y.reshape(-1, 64).double().numpy() - y_exact) <= err), (dtype, i)
    rel = float((got - want).pow(2).mean().sqrt() / want.pow(2).mean().sqrt())
    assert rel <= LOGIT_BUDGET[dtype], (dtype, rel)


class Conv1D(nn.Module):
    """transformers' Conv1D: a linear layer whose weight is stored [in, out]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.1)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(*x.shape[:-1], self.nf)


class GPT2MLP(nn.Module):
    def __init__(self, d, hidden, p=0.1):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(hidden, d), Conv1D(d, hidden)
        self.act, self.dropout = nn.GELU(approximate="tanh"), nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class QuickGeluMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(d, 64), nn.Linear(d, 64), nn.Linear(64, d)
        self.act_fn = lambda z: z * torch.sigmoid(1.702 * z)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LiesAboutItsActivation(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(d, 64), nn.Linear(d, 64), nn.Linear(64, d)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x)) * self.up_proj(x))


class LlamaMLP(nn.Module):
    """Hugging Face's LlamaMLP (Mistral's and Qwen2's are the same), without transformers."""

    def __init__(self, d, hidden=64):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down_proj, self.act_fn = nn.Linear(hidden, d, bias=False), nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class FeedForward(nn.Module):
    """Meta's Llama FeedForward: w2(silu(w1(x)) * w3(x)), the activation in its forward."""

    def __init__(self, d, hidden=64):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False), \
            nn.Linear(d, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class FcMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 64), nn.Linear(64, d)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def test_patch_other_shapes_and_what_it_leaves(fft):
    torch.manual_seed(0)
    model = nn.ModuleDict({"gpt2": GPT2MLP(32, 128), "quick": QuickGeluMLP(32), "liar": LiesAboutItsActivation(32),
                           "fc": FcMLP(32), "seeds_gelu": seeds.GeluMLP(32, bias=True), "llama": LlamaMLP(32),
                           "meta": FeedForward(32)}).eval()
    x = torch.randn(5, 32)
    with torch.no_grad():
        want = {k: m(x) for k, m in model.items()}
    report = fft.patch(model, dtype="f32")
    assert sorted(e.name for e in report.replaced) == ["gpt2", "llama", "meta", "seeds_gelu"], str(report)
    assert {e.name: e.variant for e in report.replaced} == {"gpt2": "gelu_tanh", "llama": "swiglu", "meta": "swiglu",
                                                            "seeds_gelu": "gelu"}
    left = {e.name: e.reason for e in report.left}
    assert set(left) == {"quick", "liar", "fc"}, str(report)
    assert "not one ffn runs" in left["quick"]
    assert "differs from ffn's swiglu" in left["liar"]
    assert "none of ffn's MLP shapes" in left["fc"]
    with torch.no_grad():
        for k in ("gpt2", "seeds_gelu", "llama", "meta"):
            np.testing.assert_allclose(model[k](x).numpy(), want[k].numpy(), rtol=1e-4, atol=1e-5)
    # Trainable, Hugging Face's names stay: the state_dict loads both ways.
    hf = nn.Sequential(LlamaMLP(32))
    keys = list(hf.state_dict())
    assert len(fft.patch(hf, inference=False).replaced) == 1 and isinstance(hf[0], fft.Block)
    assert list(hf.state_dict()) == keys == ["0.gate_proj.weight", "0.up_proj.weight", "0.down_proj.weight"]
    # q4_0 needs multiples of 32: hidden 40 is left, with ffn's reason.
    odd = nn.Sequential(seeds.SwiGLU(32, hidden=40))
    report = fft.patch(odd, dtype="q4_0")
    assert not report.replaced and "32" in report.left[0].reason
    with pytest.raises(ValueError, match="q4_x"):  # not a type: an error, not 'left' for every MLP
        fft.patch(odd, dtype="q4_x")
    with pytest.raises(ValueError, match="trainable in f32"):
        fft.patch(odd, dtype="q8_0", inference=False)


def test_patched_model_trains_as_the_unpatched_one(fft):
    """AdamW on a fixed batch of a repeating token pattern: the patched trainable model's loss
    falls as the unpatched one's does, step for step within f32 drift (ffn's and torch's f32
    sums differ in the last bits, and 30 steps of Adam carry that forward)."""
    torch.manual_seed(0)
    base = tiny_llama()
    patched = copy.deepcopy(base)
    report = fft.patch(patched, inference=False)
    assert len(report.replaced) == 2 and all(e.types == "f32, trainable" for e in report.replaced)
    assert isinstance(patched.layers[1].mlp, fft.Block) and patched.layers[1].mlp.variant == "swiglu"
    assert list(patched.state_dict()) == list(base.state_dict())  # the same keys: loads both ways
    base.load_state_dict(patched.state_dict())
    pattern = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3] * 4)
    tokens = torch.stack([pattern.roll(s) for s in range(4)])
    losses = {}
    for name, m in (("torch", base), ("ffn", patched)):
        opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
        losses[name] = []
        for _ in range(30):
            logits = m(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    t, f = np.array(losses["torch"]), np.array(losses["ffn"])
    assert t[-1] < 0.5 * t[0] and f[-1] < 0.5 * f[0], (t, f)
    np.testing.assert_allclose(f, t, rtol=2e-3)
    # The trained weights are in ffn's block: its inference forward agrees with the trained module.
    x = torch.randn(3, 64)
    with torch.no_grad():
        mlp = patched.layers[0].mlp
        np.testing.assert_allclose(mlp.for_inference()(x).numpy(), mlp(x).numpy(), rtol=1e-5, atol=1e-6)
