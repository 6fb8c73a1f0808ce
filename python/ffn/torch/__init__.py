"""ffn's blocks as PyTorch modules: forward and backward run ffn's kernels inside torch's autograd.

    import torch, ffn.torch
    mlp = ffn.torch.SwiGLU(4096)                  # the seeds' signature and parameter names
    y = mlp(x); y.sum().backward()                # ffn's forward and ffn's backward
    report = ffn.torch.patch(model, dtype="q8_0") # every MLP it recognises → an ffn inference block
    print(report)                                 # what it replaced, and what it left and why

Modules: one per class of ffn.SEEDS_CLASSES (SwiGLU, GeluMLP, …: the seeds' names,
tests/golden/seeds.py), with the seeds' constructor signatures — (d, hidden=None,
multiple=256, bias=False) for gated variants, (d, hidden=None, bias=False) for 2-matrix ones;
Block(variant, d, …) for any pair. Their parameters are `gate`, `up`, `down` (nn.Linear-shaped [out, in] weights,
optional biases), so state_dict() loads both ways with the seeds' modules, and they start as
nn.Linear does (torch's generator: torch.manual_seed gives the seeds' module's weights). The
parameters *are* the ffn block's weights (torch tensors over its memory), so an optimizer's
in-place step is what the next forward uses; a parameter whose storage was replaced (deepcopy,
`p.data = …`) is copied back into the block once, at the next forward.

Tensors: CPU tensors only — a CUDA tensor is an ffn.Error (ffn's kernels run on the CPU).
x is [..., d]; a C-contiguous float32 x is not copied (NumPy shares its memory, as do y, dx
and the weight gradients, which ffn allocates and torch adopts); a non-contiguous or
non-float32 x (say bf16) is copied to contiguous float32 and y (and dx) come back in x's
dtype. Trainable modules compute in float32 (their parameters are float32); InferenceMLP runs
the block's weight type (bf16, q8_0, q4_0, …; see the README's contract table).

Autograd: a torch.autograd.Function whose forward runs ffn's forward_train, keeping its cache
(ffn._core.forward_train), and whose backward runs ffn's backward on it: dx and every dW, db.
Under torch.no_grad (or when nothing needs a gradient) the plain forward runs. torch.library
custom ops with fake (meta) kernels are not registered: the installed torch (Debian's 1.13)
has neither torch.library.custom_op nor register_fake, and torch.compile (2.x) would break
the graph at these modules.

This module imports torch; `import ffn` alone never does.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

import ffn as _ffn
from ffn import _core

Error = _ffn.Error

__all__ = ["Block", *_ffn.SEEDS_CLASSES, "InferenceMLP", "patch", "PatchReport"]

_CORE_NAMES = ("gate", "up", "down")


def _rows(x, d, what="x"):
    """x [..., d] as a float32 C-contiguous [N, d] CPU tensor: x itself (a view) when it
    already is one, else a copy."""
    if not isinstance(x, torch.Tensor):
        raise Error(f"{what} must be a torch tensor, got {type(x).__name__}")
    if x.device.type != "cpu":
        raise Error(f"ffn.torch runs on CPU tensors; {what} is on {x.device} (move the module and its input to the CPU)")
    if x.dim() == 0 or x.shape[-1] != d:
        raise Error(f"{what} has shape {tuple(x.shape)}; the block takes [..., {d}]")
    rows = x.detach().reshape(-1, d)
    if rows.dtype != torch.float32:
        rows = rows.float()
    return rows.contiguous()


def _back(y, shape, dtype):
    """ffn's float32 [N, d] NumPy result as a tensor of `shape` and `dtype` (shared when float32)."""
    out = torch.from_numpy(y).view(shape)
    return out if dtype == torch.float32 else out.to(dtype)


class _CoreRef:
    """The ffn._core.Block behind a trainable module, with torch views of its weights. A copy
    (deepcopy, pickle) is a fresh block of the same shape: the module's copied parameters are
    copied into it at its first forward."""

    def __init__(self, core):
        self.core = core
        self.views = {name: torch.from_numpy(core.tensor(name)) for name in core.tensor_names()}

    @classmethod
    def fresh(cls, variant, d, hidden, bias):
        return cls(_core.Block(variant, d, hidden, None, None, bias, 0))

    def __reduce__(self):
        c = self.core
        return (_CoreRef.fresh, (c.variant, c.d_model, c.hidden, c.bias))


class _Projection(nn.Linear):
    """An nn.Linear whose weight (and bias) are given tensors: views of an ffn block's weights."""

    def __init__(self, weight, bias):
        nn.Module.__init__(self)
        self.out_features, self.in_features = weight.shape
        self.weight = nn.Parameter(weight)
        if bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = nn.Parameter(bias)

    def reset_parameters(self):  # nn.Linear's, on the shared tensors
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            nn.init.uniform_(self.bias, -bound, bound)


class _TrainFunction(torch.autograd.Function):
    """y = block(x) by ffn's forward_train; backward by ffn's backward from its cache."""

    @staticmethod
    def forward(ctx, x, module, *params):
        core = module._ffn.core
        rows = _rows(x, core.d_model)
        y, cache = _core.forward_train(core, rows.numpy(), module.recompute, module.threads)
        ctx.module, ctx.rows, ctx.cache, ctx.shape, ctx.dtype = module, rows, cache, x.shape, x.dtype
        # The parameters are saved so that torch's version check catches one changed in place
        # between this forward and its backward (the cache would no longer match).
        ctx.save_for_backward(*params)
        return _back(y, x.shape, x.dtype)

    @staticmethod
    def backward(ctx, dy):
        params = ctx.saved_tensors
        module = ctx.module
        core = module._ffn.core
        grads = _core.backward_from_cache(core, ctx.rows.numpy(), ctx.cache, _rows(dy, core.d_model, "dy").numpy(),
                                          module.threads)
        ctx.cache = ctx.rows = None
        out = [_back(grads["x"], ctx.shape, ctx.dtype) if ctx.needs_input_grad[0] else None, None]
        for (core_name, _), p, needed in zip(module._bindings(), params, ctx.needs_input_grad[2:]):
            out.append(torch.from_numpy(grads[core_name]) if needed else None)
        return tuple(out)


class Block(nn.Module):
    """A trainable ffn feed-forward block as an nn.Module: `variant` is one of ffn.VARIANTS,
    swiglu_oai, or <activation> / gated_<activation>. hidden: explicit, else
    the seeds' rule (gated: 8/3·d rounded up to `multiple`, default 256; 2-matrix: 4·d). Keywords:
    ffn_dim_multiplier (Llama's rule), threads (ffn's thread count; None, the default, is
    ffn's own pool of one thread per core; a count runs on a pool of that many threads kept
    for every call that gives the same count),
    recompute (keep only x between forward and backward, recomputing the pre-activations:
    the same gradients, bit for bit), names (the three projections' attribute names, e.g.
    ("gate_proj", "up_proj", "down_proj") so that a patched Hugging Face model keeps its
    state_dict keys), dropout (a module applied to the output, as GPT-2's MLP does)."""

    def __init__(self, variant, d, hidden=None, multiple=None, bias=False, *, ffn_dim_multiplier=None, threads=None,
                 recompute=False, names=_CORE_NAMES, dropout=None):
        super().__init__()
        core = _core.Block(variant, d, hidden, multiple, ffn_dim_multiplier, bias, 0)
        self._ffn = _CoreRef(core)
        self.threads, self.recompute = threads, recompute
        self._names = tuple(names)
        for core_name, name in zip(_CORE_NAMES, self._names):
            if core.gated or core_name != "gate":
                setattr(self, name, _Projection(self._ffn.views[core_name + ".weight"],
                                                self._ffn.views.get(core_name + ".bias")))
        self.dropout = dropout
        self.reset_parameters()

    variant = property(lambda self: self._ffn.core.variant)
    gated = property(lambda self: self._ffn.core.gated)
    activation = property(lambda self: self._ffn.core.activation)
    d = property(lambda self: self._ffn.core.d_model)
    hidden = property(lambda self: self._ffn.core.hidden)
    bias = property(lambda self: self._ffn.core.bias)

    def reset_parameters(self):
        """nn.Linear's initialisation of gate, up and down in that order, from torch's generator."""
        for name in self._names:
            if hasattr(self, name):
                getattr(self, name).reset_parameters()

    def _bindings(self):
        """(core tensor name, parameter) pairs, in the core's order."""
        out = []
        for core_name, name in zip(_CORE_NAMES, self._names):
            if not hasattr(self, name):
                continue
            proj = getattr(self, name)
            out.append((core_name + ".weight", proj.weight))
            if proj.bias is not None:
                out.append((core_name + ".bias", proj.bias))
        return out

    def _sync(self):
        """Points every parameter at the block's memory again where something replaced its storage
        (copying its values into the block first)."""
        for core_name, p in self._bindings():
            view = self._ffn.views[core_name]
            if p.data_ptr() == view.data_ptr() and p.shape == view.shape and p.dtype == view.dtype:
                continue
            if p.device.type != "cpu" or p.dtype != torch.float32 or p.shape != view.shape:
                raise Error(f"ffn.torch blocks keep float32 CPU parameters; {core_name} is now {p.dtype} "
                            f"{tuple(p.shape)} on {p.device}")
            with torch.no_grad():
                view.copy_(p)
            p.data = view

    def forward(self, x):
        self._sync()
        params = [p for _, p in self._bindings()]
        if x.numel() == 0:
            y = x.new_zeros(x.shape)
        elif torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params)):
            y = _TrainFunction.apply(x, self, *params)
        else:
            rows = _rows(x, self.d)
            y = _back(self._ffn.core.forward(rows.numpy(), self.threads), x.shape, x.dtype)
        return self.dropout(y) if self.dropout is not None else y

    def for_inference(self, dtype="f32", gate=None, up=None, down=None, threads=None):
        """This block made once for inference in `dtype` (or each matrix its own type) as an
        InferenceMLP; this module stays trainable."""
        self._sync()
        return InferenceMLP(_ffn.InferenceBlock._wrap(self._ffn.core.for_inference(gate or dtype, up or dtype,
                                                                                       down or dtype)),
                            threads=threads if threads is not None else self.threads)

    def extra_repr(self):
        return f"variant={self.variant!r}, d={self.d}, hidden={self.hidden}, bias={self.bias}"


def _seeds_class(name, variant):
    """The module class ffn.SEEDS_CLASSES names for `variant`, with the seeds' signature: gated
    blocks (d, hidden=None, multiple=256, bias=False), 2-matrix ones (d, hidden=None,
    bias=False); keywords as Block's."""
    if _core.variant_info(variant)[1]:
        def __init__(self, d, hidden=None, multiple=256, bias=False, **options):
            Block.__init__(self, variant, d, hidden, multiple, bias, **options)
        rule = "the seeds' (d, hidden=None, multiple=256, bias=False)"
    else:
        def __init__(self, d, hidden=None, bias=False, **options):
            Block.__init__(self, variant, d, hidden, None, bias, **options)
        rule = "the seeds' (d, hidden=None, bias=False); hidden = 4·d"
    return type(name, (Block,), {"__init__": __init__, "__module__": __name__, "__qualname__": name,
                                 "__doc__": f"{_ffn._variant_formula(variant)}, by ffn: {variant}; {rule}."})


for _name, _variant in _ffn.SEEDS_CLASSES.items():
    globals()[_name] = _seeds_class(_name, _variant)

CLASS_OF_VARIANT = {variant: globals()[name] for name, variant in _ffn.SEEDS_CLASSES.items()}


class _InferenceRef:
    """An ffn.InferenceBlock behind an InferenceMLP. It is never changed after it is made, so a
    copy of the module shares it; it cannot be pickled (make it again from the weights)."""

    def __init__(self, block):
        self.block = block

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise Error("an ffn.torch.InferenceMLP cannot be pickled: save the f32 weights and make it again")


class _InferenceFunction(torch.autograd.Function):
    """The forward of an inference block inside a graph that tracks gradients: it has no backward."""

    @staticmethod
    def forward(ctx, x, module):
        return module._run(x)

    @staticmethod
    def backward(ctx, dy):
        raise Error("an ffn.torch.InferenceMLP has no backward: patch with inference=False to train")


class InferenceMLP(nn.Module):
    """A feed-forward block for inference: an ffn.InferenceBlock (each matrix in its weight
    type: f32, bf16, f16, q8_0, q4_0, …) as an nn.Module, forward only. It has no parameters
    (the weights live in ffn's panels, in their type: state_dict() is empty); `block` is the
    ffn.InferenceBlock (`.types`, `.describe()`). x: CPU [..., d] of any floating dtype (a bf16
    x is widened to float32, exactly, and y rounded back to bf16); a graph that tracks
    gradients may run it, but its backward is an error."""

    def __init__(self, block, threads=None, dropout=None):
        super().__init__()
        if not isinstance(block, _ffn.InferenceBlock):
            raise Error(f"InferenceMLP takes an ffn.InferenceBlock, got {type(block).__name__}")
        self._ffn = _InferenceRef(block)
        self.threads = threads
        self.dropout = dropout

    block = property(lambda self: self._ffn.block)
    variant = property(lambda self: self._ffn.block.variant)
    d = property(lambda self: self._ffn.block.d_model)
    hidden = property(lambda self: self._ffn.block.hidden)
    types = property(lambda self: self._ffn.block.types)

    def _run(self, x):
        if x.numel() == 0:
            return x.new_zeros(x.shape)
        rows = _rows(x, self.d)
        return _back(self._ffn.block._core.forward(rows.numpy(), self.threads), x.shape, x.dtype)

    def forward(self, x):
        y = _InferenceFunction.apply(x, self) if torch.is_grad_enabled() and x.requires_grad else self._run(x)
        return self.dropout(y) if self.dropout is not None else y

    def extra_repr(self):
        types = ", ".join(f"{k}={v}" for k, v in self.types.items())
        return f"variant={self.variant!r}, d={self.d}, hidden={self.hidden}, {types}"


from .patch import PatchReport, patch  # noqa: E402  (patch builds the classes above)
