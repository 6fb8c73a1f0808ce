"""ffn.torch.patch: every MLP of a torch model that ffn recognises, replaced by an ffn block.

Recognised shapes (child modules by name; each a projection of nn.Linear's layout unless said):
  Hugging Face Llama / Mistral / Qwen2 (and MoE experts of that shape): gate_proj, up_proj,
      down_proj, the activation from `act_fn` or config.hidden_act;
  Meta / Mixtral: w1 (gate), w3 (up), w2 (down), the activation from `act_fn`, or SwiGLU for
      Meta's own FeedForward class (which applies F.silu in its forward);
  the seeds' modules (tests/golden/seeds.py): gate, up, down, or up, down, by class name;
  GPT-2: c_fc, c_proj (transformers' Conv1D, weights stored [in, out]), `act`, and a dropout.
Every candidate is checked before it is replaced: its own forward and the ffn block (f32) run
on a few random tokens, and a module whose output differs (another activation, a scale, a
different forward) is left, with the measured difference as the reason.
"""
from dataclasses import dataclass, field

import torch
from torch import nn

import ffn as _ffn
from ffn import _core

from . import Block, InferenceMLP

Error = _ffn.Error

# Activation modules and functions by what they compute (ffn's activation names).
_ACTIVATION_OF_TYPE = {"SiLU": "swish", "SiLUActivation": "swish", "Swish": "swish", "ReLU": "relu",
                       "Sigmoid": "sigmoid", "Identity": "identity", "GELUActivation": "gelu",
                       "NewGELUActivation": "gelu_tanh", "GELUTanh": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh",
                       "FastGELUActivation": "gelu_tanh", "AccurateGELUActivation": "gelu_tanh",
                       "QuickGELUActivation": "quick_gelu", "ReLUSquaredActivation": "relu2", "ReLU6": "relu6"}
_ACTIVATION_OF_FUNCTION = {torch.nn.functional.silu: "swish", torch.nn.functional.relu: "relu",
                           torch.sigmoid: "sigmoid", torch.nn.functional.gelu: "gelu",
                           torch.nn.functional.relu6: "relu6"}
# (scheme, (gate, up, down) child names; gate None for 2-matrix blocks)
_SHAPES = [("hugging face", ("gate_proj", "up_proj", "down_proj")), ("meta", ("w1", "w3", "w2")),
           ("seeds", ("gate", "up", "down")), ("gpt-2", (None, "c_fc", "c_proj")), ("seeds", (None, "up", "down"))]


@dataclass
class Entry:
    name: str        # the module's name in model.named_modules()
    kind: str        # its class
    variant: str = ""
    types: str = ""  # the replacement's weight types, e.g. "q8_0" or "gate=q4_0 up=q4_0 down=q8_0"
    reason: str = ""  # why it was left (or a note on the replacement)


@dataclass
class PatchReport:
    """What patch() replaced and what it left (MLP-like modules only), and why."""
    replaced: list = field(default_factory=list)
    left: list = field(default_factory=list)

    def __str__(self):
        lines = [f"replaced {len(self.replaced)} MLP{'s' if len(self.replaced) != 1 else ''}, "
                 f"left {len(self.left)}"]
        for e in self.replaced:
            lines.append(f"  replaced {e.name} ({e.kind}) by ffn {e.variant}, {e.types}" + (f"; {e.reason}" if e.reason else ""))
        for e in self.left:
            lines.append(f"  left     {e.name} ({e.kind}): {e.reason}")
        return "\n".join(lines)


def _activation(module, gated, scheme):
    """ffn's activation of the MLP module, or None with a reason."""
    cls = type(module).__name__
    # transformers' Gemma3nTextMLP applies a Gaussian top-k to the gate of its first layers
    # (activation_sparsity > 0), which the blocks patch() makes do not compute.
    sparsity = getattr(module, "activation_sparsity", 0.0)
    if isinstance(sparsity, (int, float)) and sparsity > 0.0:
        return None, (f"its gate's Gaussian top-k (activation_sparsity={sparsity}, Gemma 3n) is not computed by "
                      "ffn.torch's blocks")
    if scheme == "seeds":
        variant = _ffn.SEEDS_CLASSES.get(cls)
        if variant is None:
            return None, f"its class {cls} is not one of the seeds' modules, and it has no activation attribute"
        if _core.variant_info(variant)[1] != gated:
            return None, f"{cls} is {'gated' if not gated else '2-matrix'} but its children say otherwise"
        return variant, None
    for attr in ("act_fn", "act", "activation_fn", "activation"):
        act = getattr(module, attr, None)
        if act is None:
            continue
        if isinstance(act, nn.GELU):
            name = "gelu_tanh" if act.approximate == "tanh" else "gelu"
        elif isinstance(act, nn.Module):
            name = _ACTIVATION_OF_TYPE.get(type(act).__name__)
        else:
            name = _ACTIVATION_OF_FUNCTION.get(act)
        if name is None:
            return None, f"its activation {attr}={act!r} is not one ffn runs"
        return name, None
    config = getattr(module, "config", None)
    for key in ("hidden_act", "activation_function"):
        if config is not None and isinstance(getattr(config, key, None), str):
            name = _core.hf_activation(getattr(config, key))
            why = _core.hf_activation_refusal(getattr(config, key)) or "not an activation ffn knows"
            return (name, None) if name else (None, f"config.{key}={getattr(config, key)!r}: {why}")
    if scheme == "meta" and cls == "FeedForward":
        return "swish", None  # Meta's Llama: w2(F.silu(w1(x)) * w3(x))
    return None, "no activation it recognises (act_fn, act, config.hidden_act)"


def _weights(module, names, scheme):
    """The MLP's tensors under the seeds' names, nn.Linear's layout (GPT-2's Conv1D transposed)."""
    state = {}
    for ours, name in zip(("gate", "up", "down"), names):
        if name is None:
            continue
        child = getattr(module, name)
        w, b = child.weight, getattr(child, "bias", None)
        state[ours + ".weight"] = w.detach().t() if scheme == "gpt-2" else w.detach()
        if b is not None:
            state[ours + ".bias"] = b.detach()
    return state


def _candidate(module):
    """(scheme, names) of an MLP shape the module has, or None."""
    for scheme, (g, u, d) in _SHAPES:
        kinds = (("Conv1D",) if scheme == "gpt-2" else ("Linear",))
        children = [getattr(module, n, None) for n in (g, u, d) if n is not None]
        if all(isinstance(c, nn.Module) and (isinstance(c, nn.Linear) or type(c).__name__ in kinds)
               for c in children):
            if scheme == "seeds" and g is None and isinstance(getattr(module, "gate", None), nn.Module):
                continue
            return scheme, (g, u, d)
    return None


def _looks_like_an_mlp(name, module):
    cls = type(module).__name__.lower()
    return any(k in cls for k in ("mlp", "feedforward", "ffn", "glu")) or name.rsplit(".", 1)[-1] in ("mlp", "feed_forward")


def _probe(module, block, state):
    """Relative RMS difference of the module's own forward and the f32 ffn block on 4 random
    tokens scaled so the first projection's outputs have RMS 2 (where activations differ)."""
    gen = torch.Generator().manual_seed(0)
    d = block.d
    x = torch.randn(4, d, generator=gen)
    first = state.get("gate.weight", state["up.weight"]).float()
    pre = x @ first.t()
    x = x * (2.0 / max(float(pre.pow(2).mean().sqrt()), 1e-30))
    dtype = state["up.weight"].dtype
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            want = module(x.to(dtype)).float()
            got = block(x)
    finally:
        module.train(was_training)
    scale = float(want.pow(2).mean().sqrt())
    return float((got - want).pow(2).mean().sqrt()) / max(scale, 1e-30)


def patch(model, dtype="f32", inference=True, *, gate=None, up=None, down=None, threads=None):
    """Replaces (in place) every MLP of `model` that ffn recognises (see this module's doc) by
    an ffn block, and returns a PatchReport of what it replaced and what it left, and why.

    inference=True: each becomes an InferenceMLP in `dtype` (a type of `ffn types`: f32, bf16,
    f16, q8_0, q4_0, the K-quants q6_K … q2_K — or each matrix as `gate`, `up`, `down` say,
    e.g. gate="q4_K", up="q4_K", down="q6_K" as llama.cpp's Q4_K_M stores some layers), made once from the module's weights; its
    forward has no backward, and its weights leave the model's state_dict (they live in
    ffn's panels). Dropout (GPT-2's) is dropped: inference runs in eval mode.
    inference=False: each becomes a trainable f32 ffn.torch Block holding a copy of the
    weights, under the module's own names (gate_proj/… stay gate_proj/…, so the state_dict
    keys do not change; GPT-2's c_fc/c_proj become up/down in nn.Linear's layout), keeping
    requires_grad and the dropout.
    A module on another device than the CPU, or whose shape or activation ffn does not run
    (q8_0/q4_0 need d and hidden to be multiples of 32, the K-quants of 256), is left as it was."""
    if not inference and any(t not in (None, "f32") for t in (dtype, gate, up, down)):
        raise Error(f"inference=False keeps the blocks trainable in f32; dtype={dtype!r} is for inference=True")
    if inference:  # a type ffn does not have is the caller's error, not a reason to leave every MLP
        probe_types = [t or dtype or "f32" for t in (gate, up, down)]
        _ffn.SwiGLU(256, hidden=256)._core.for_inference(*probe_types)  # 256: whole blocks of every type
    report = PatchReport()
    replaced_prefixes = []
    for name, module in list(model.named_modules()):
        if any(name.startswith(p) for p in replaced_prefixes) or isinstance(module, (Block, InferenceMLP)):
            continue
        found = _candidate(module)
        if found is None:
            if _looks_like_an_mlp(name, module) and any(True for _ in module.children()):
                children = ", ".join(n for n, _ in module.named_children())
                report.left.append(Entry(name, type(module).__name__,
                                         reason=f"its children ({children}) are none of ffn's MLP shapes"))
            continue
        scheme, names = found
        entry = Entry(name or "(the model)", type(module).__name__)
        gated = names[0] is not None
        activation, why = _activation(module, gated, scheme)
        if activation is None:
            entry.reason = why
            report.left.append(entry)
            continue
        variant = activation if scheme == "seeds" else ("gated_" + activation if gated else activation)
        state = _weights(module, names, scheme)
        devices = {t.device.type for t in state.values()}
        if devices != {"cpu"}:
            entry.reason = f"its weights are on {', '.join(sorted(devices))}; ffn runs on the CPU"
            report.left.append(entry)
            continue
        up_w = state["up.weight"]
        hidden, d = int(up_w.shape[0]), int(up_w.shape[1])
        dropout = getattr(module, "dropout", None) if scheme == "gpt-2" else None
        own_names = ("gate", "up", "down") if scheme == "gpt-2" else tuple(n or "gate" for n in names)
        try:
            block = Block(variant, d, hidden, None, "up.bias" in state, threads=threads, names=own_names,
                          dropout=dropout if isinstance(dropout, nn.Module) else None)
            if set(n for n, _ in block._bindings()) != set(state):
                raise Error(f"its tensors {sorted(state)} are not those of a {variant} block")
            with torch.no_grad():
                for core_name, p in block._bindings():
                    p.copy_(state[core_name].float())
            dropout_saved, block.dropout = block.dropout, None
            diff = _probe(module, block, state)
            block.dropout = dropout_saved
            budget = 1e-4 if up_w.dtype == torch.float32 else 3e-2
            if not diff <= budget:
                raise Error(f"its forward differs from ffn's {block.variant} by {diff:.2g} (relative RMS) on random tokens")
            entry.variant = block.variant
            if inference:
                replacement = block.for_inference(dtype or "f32", gate, up, down, threads=threads)
                entry.types = " ".join(f"{k}={v}" for k, v in replacement.types.items())
                if len(set(replacement.types.values())) == 1:
                    entry.types = next(iter(replacement.types.values()))
                if dropout is not None:
                    entry.reason = "its dropout is dropped (inference)"
            else:
                replacement, entry.types = block, "f32, trainable"
                for (core_name, p) in block._bindings():
                    p.requires_grad_(_requires_grad(module, names, core_name, scheme))
        except Error as e:
            entry.reason = str(e)
            report.left.append(entry)
            continue
        replacement.train(module.training)
        _set(model, name, replacement)
        replaced_prefixes.append(name + "." if name else "")
        report.replaced.append(entry)
    return report


def _requires_grad(module, names, core_name, scheme):
    proj, kind = core_name.split(".")
    child = getattr(module, names[("gate", "up", "down").index(proj)])
    return bool(getattr(child, kind).requires_grad)


def _set(model, name, replacement):
    if not name:
        raise Error("the model itself is an MLP: use ffn.torch's modules directly (or patch a model holding it)")
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, replacement)
