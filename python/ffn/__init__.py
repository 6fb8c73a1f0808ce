"""ffn.cpp from Python: the feed-forward blocks of transformers, in the seeds' own shape.

    import ffn
    m = ffn.SwiGLU(4096)                         # hidden 11008, like the seeds' module
    print(m.hidden, sum(p.size for p in m.parameters()))
    y = m(x)                                     # x: float32 NumPy array [T, 4096]
    m = ffn.load("model.gguf", layer=3)          # for inference, in the file's types (HF / Meta / GPT-2 / GGUF names)
    m = ffn.load_trainable("model.safetensors", layer=3)  # f32, trainable
    m = ffn.from_torch(torch_module)             # a seeds' or Hugging Face MLP module
    import ffn.torch                             # the blocks as torch modules, and ffn.torch.patch(model)

Parameters are NumPy views of the block's own f32 weights (nn.Linear layout [out, in]):
writing into them changes the block, as with torch parameters.
"""
from . import _core

Error = _core.Error
__version__ = _core.__version__
# The library's named variants ("relu", …, "swiglu"); Block takes these, "swiglu_oai" and any
# "<activation>" or "gated_<activation>" (ffn.Error listing them otherwise).
VARIANTS = tuple(_core.variants())

# The seeds' module classes (tests/golden/seeds.py) and the variant each runs: the one list of
# Python's class names for variants (ffn.torch and ffn.torch.patch read it too). What a
# variant is — gated or not, its activation — is the library's (_core.variant_info).
SEEDS_CLASSES = {"SwiGLU": "swiglu", "GLU": "glu", "Bilinear": "bilinear", "ReGLU": "reglu", "GEGLU": "geglu",
                 "GatedGeluTanh": "gated_gelu_tanh", "GeluMLP": "gelu", "ReluMLP": "relu", "GeluTanhMLP": "gelu_tanh",
                 "SwishMLP": "swish"}

__all__ = ["Block", "InferenceBlock", "MoeBlock", "TrainableMoe", *SEEDS_CLASSES, "load", "load_trainable", "from_torch",
           "active_isa", "supported_isas", "ISAS", "dequantize", "quantize", "QUANT_TYPES", "VARIANTS", "SEEDS_CLASSES",
           "Error", "sparsity_threshold", "down_kept_share"]


def __getattr__(name):
    """`ffn.torch` on first use (it imports torch; `import ffn` alone never does)."""
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'ffn' has no attribute {name!r}")


# The instruction-set levels of this build (the library's list, narrowest first: on x86-64 scalar, avx2,
# avx2_vnni, avx512, avx512_vnni, avx512_bf16, amx_int8), the values FFN_ISA takes.
ISAS = tuple(_core.isas())


def active_isa():
    """The instruction set the kernels use, one of ISAS: the widest this CPU supports (supported_isas();
    on Intel's cores never avx512_bf16, whose bf16 dot product ran slower there than widening, but
    amx_int8 where the CPU has AMX) unless FFN_ISA names another. On avx512_bf16 bf16 inference blocks round their
    activations to bf16 for the dot products (see the README's accuracy table)."""
    return _core.active_isa()


def supported_isas():
    """The levels of ISAS this CPU supports, narrowest first."""
    return tuple(_core.supported_isas())


# ggml's lower-case names of every type of ffn's weight-type table ("q4_k", "iq4_nl", "mxfp4", ...).
QUANT_TYPES = tuple(_core.quant_types())


def dequantize(raw, type, n):
    """The n float32 values that `raw` (bytes, or a C-contiguous uint8 array: ggml's stored
    bytes, as in a GGUF tensor) holds in stored type `type`, one of QUANT_TYPES (ggml's
    lower-case names). ggml's dequantize_row_<type>, bit for bit. n must be a multiple of the
    type's block (32 values; 256 for q2_k … q6_k and iq4_xs) and raw exactly n values' bytes.
    (mxfp4's e8m0 scale 0xff decodes as ggml does, to 2^127, not NaN.)
    Returns a 1-D float32 array."""
    return _core.dequantize(raw, type, n)


def quantize(x, type):
    """The stored bytes of float32 x — one row [n] or rows [rows, n], each row quantised on
    its own — in stored type `type` (see dequantize), as ggml's reference quantiser
    quantize_row_<type>_ref (no importance matrix) writes them, byte for byte. n must be a
    multiple of the type's block; a non-finite value or a block whose scale does not fit
    binary16 is an ffn.Error (mxfp4: a block whose largest |x| is below 2^-125 takes the
    smallest scale, where ggml's conversion is undefined). Returns uint8 [bytes] or [rows, bytes per row]."""
    return _core.quantize(x, type)


class _BlockShape:
    """What both block kinds say of themselves, and their forward, over the core object."""

    @classmethod
    def _wrap(cls, core):
        block = cls.__new__(cls)
        block._core = core
        return block

    variant = property(lambda self: self._core.variant)
    gated = property(lambda self: self._core.gated)
    activation = property(lambda self: self._core.activation)
    d_model = property(lambda self: self._core.d_model)
    hidden = property(lambda self: self._core.hidden)
    bias = property(lambda self: self._core.bias)

    def __call__(self, x, threads=None):
        """y = block(x) for float32 x of shape [T, d] or [d]; x is not copied when it is
        already a C-ordered float32 array. `threads`: default one per core."""
        return self._core.forward(x, threads)

    forward = __call__


class Block(_BlockShape):
    """A feed-forward block: `variant` is one of VARIANTS, swiglu_oai (gpt-oss's experts), or
    <activation> / gated_<activation>. Weights start as nn.Linear's default initialisation
    (uniform in ±1/sqrt(fan_in)), drawn deterministically from `seed`."""

    def __init__(self, variant, d, hidden=None, multiple_of=None, ffn_dim_multiplier=None, bias=False, seed=0):
        self._core = _core.Block(variant, d, hidden, multiple_of, ffn_dim_multiplier, bias, seed)

    def for_inference(self, dtype="f32", gate=None, up=None, down=None):
        """This block made once for inference (an InferenceBlock): its matrices stored as
        `dtype` (f32, bf16, f16, q8_0, q4_0 — or each as `gate`, `up`, `down` say; biases
        stay float32) and laid out in the panels the forward kernels read. q8_0 and q4_0
        round as ggml's reference quantisers and need d and hidden to be multiples of 32.
        Its outputs are bit-identical for any thread count and whatever else is in the
        batch. This block stays as it is (trainable)."""
        return InferenceBlock._wrap(self._core.for_inference(gate or dtype, up or dtype, down or dtype))

    def named_parameters(self):
        """(name, NumPy view) pairs in torch's order: gate, up, down (each weight, then bias)."""
        return [(name, self._core.tensor(name)) for name in self._core.tensor_names()]

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def state_dict(self):
        return dict(self.named_parameters())

    def load_state_dict(self, state_dict):
        """Copies NumPy arrays or torch tensors in, by the seeds' names (gate.weight, up.weight,
        down.weight, .bias). Every parameter must be given, with its exact shape."""
        expected = set(self._core.tensor_names())
        given = set(state_dict)
        if given != expected:
            raise Error(f"state_dict keys differ: missing {sorted(expected - given)}, unexpected {sorted(given - expected)}")
        for name, value in state_dict.items():
            self._core.set_tensor(name, _to_numpy(value))


    def backward(self, x, dy, recompute=False, threads=None):
        """Gradients of sum(dy * block(x)) for float32 x and dy of shape [T, d] (or [d]): a dict
        {"x": dx, "gate.weight": ..., ...} of float32 arrays, keyed like named_parameters().
        Each call starts from zero gradients. recompute=True keeps nothing between the
        passes and recomputes the pre-activations (same results, bit for bit)."""
        return self._core.backward(x, dy, recompute, threads)

    def __repr__(self):
        return (f"{type(self).__name__}(variant={self.variant!r}, d={self.d_model}, hidden={self.hidden}, "
                f"bias={self.bias})")


class InferenceBlock(_BlockShape):
    """A feed-forward block made once for inference and then only run: each matrix in its
    own weight type (`types`), laid out for the forward kernels. Made by
    Block.for_inference(dtype) or ffn.load(path). bf16 matrices on an avx512_bf16 CPU (see
    active_isa()) round the activations to bf16 for the dot products, as torch's bf16
    modules do; q8_0 / q4_0 quantise them to q8_0. It has no parameters() or backward():
    train a Block."""

    types = property(lambda self: self._core.types, doc="each matrix's weight type, e.g. {'gate': 'q8_0', ...}")
    weight_bytes = property(lambda self: self._core.weight_bytes, doc="bytes of the weights as stored, plus biases")

    @property
    def dtype(self):
        """The matrices' weight type when they share one, else None (see `types`)."""
        kinds = set(self.types.values())
        return kinds.pop() if len(kinds) == 1 else None

    def describe(self):
        """The kernels the forward runs on the active ISA, one line."""
        return self._core.describe()

    sparse = property(lambda self: self._core.sparse,
                      doc="activation-sparse decode's settings (threshold, down_threshold, max_tokens, max_kept_share, "
                          "down_kept_share, "
                          "layout_bytes: the memory it adds), or None when it is off")

    def hidden_activations(self, x, threads=None):
        """a = act(gate) (a 2-matrix block: act(up)) of tokens x [T, d], float32 [T, hidden]:
        what sparse decode compares with its threshold — calibrate one with
        ffn.sparsity_threshold(a, share)."""
        return self._core.hidden_activations(_to_numpy(x), threads)

    def hidden_values(self, x, threads=None):
        """h = act(gate)·up, the input of down (a 2-matrix block: act(up)), of tokens x [T, d],
        float32 [T, hidden], no channel dropped: what a down threshold compares — calibrate one
        with ffn.sparsity_threshold(h, share) and pass ffn.load(..., sparse=(threshold,
        down_threshold))."""
        return self._core.hidden_values(_to_numpy(x), threads)


    def __repr__(self):
        types = ", ".join(f"{k}={v}" for k, v in self.types.items())
        return (f"InferenceBlock(variant={self.variant!r}, d={self.d_model}, hidden={self.hidden}, "
                f"bias={self.bias}, {types})")


class MoeBlock:
    """A mixture-of-experts layer for inference (from ffn.load): a float32 router picks
    `top_k` of `experts` experts per token by the family's rule (`scoring`: softmax,
    sigmoid, softmax_top_k or sigmoid_top_k; `normalize_top_k`; `routed_scaling`;
    `weight_input`: Llama 4's weight on the expert's input), each expert a gated block
    of `expert_hidden` in its stored weight types (`types`), plus shared experts of
    `shared_hidden` (0: none). Outputs are bit-identical for any thread count and whatever
    else is in the batch."""

    @classmethod
    def _wrap(cls, core):
        block = cls.__new__(cls)
        block._core = core
        return block

    def __getattr__(self, name):
        if name in ("d_model", "experts", "top_k", "expert_hidden", "shared_hidden", "variant", "scoring",
                    "normalize_top_k", "routed_scaling", "weight_input", "types", "weight_bytes", "decode_bytes"):
            return getattr(self._core, name)
        raise AttributeError(f"'MoeBlock' object has no attribute {name!r}")

    def __call__(self, x, threads=None):
        """y = block(x) for float32 x of shape [T, d] or [d]."""
        return self._core.forward(x, threads)

    forward = __call__

    def route(self, x, threads=None):
        """(experts, weights): int32 [T, top_k] expert indices, best first, and their float32
        weights, as the router chooses them for x [T, d]."""
        return self._core.route(x, threads)

    def describe(self):
        """The router and the kernels the experts run on the active ISA, one line."""
        return self._core.describe()

    def __repr__(self):
        return (f"MoeBlock(d={self.d_model}, experts={self.experts}, top_k={self.top_k}, "
                f"expert_hidden={self.expert_hidden}, shared_hidden={self.shared_hidden}, scoring={self.scoring!r})")


# ffn.load's result, by the class of the core block the library loaded.
_BLOCK_OF_CORE = {_core.InferenceBlock: InferenceBlock, _core.MoeBlock: MoeBlock}

TrainableMoe = _core.TrainableMoe
TrainableMoe.__doc__ = """The training form of a mixture-of-experts block, in float32:
TrainableMoe(variant, d_model, hidden, experts, top_k, scoring="softmax", normalize_top_k=True,
routed_scaling=1.0, groups=1, top_groups=1, router_bias=False, choice_bias=False,
shared_hidden=0, shared_gate=False, bias=False, seed=0) — the rules of MoeBlock, nn.Linear's
initialisation. tensor(name) is a writable view of a parameter (tensor_names() lists them:
router.weight, experts.<e>.gate.weight, …); forward(x); route(x); backward(x, dy,
balance=0.0) returns the gradients of sum(dy * forward(x)) + balance * loss_b by name, with
"x" and the Switch load-balancing loss "balance_loss" of that forward."""


def _variant_formula(variant):
    """The block a variant name means, as a formula: "down(swish(gate(x)) * up(x))" (the library's reading of it)."""
    _name, gated, activation = _core.variant_info(variant)
    return f"down({activation}(gate(x)) * up(x))" if gated else f"down({activation}(up(x)))"


def _seeds_class(name, variant):
    """The class SEEDS_CLASSES names for `variant`, with the seeds' constructor: gated blocks
    (d, hidden=None, multiple=256, bias=False, seed=0, ffn_dim_multiplier=None), hidden by the
    Llama rule; 2-matrix ones (d, hidden=None, bias=False, seed=0), hidden = 4·d."""
    if _core.variant_info(variant)[1]:
        def __init__(self, d, hidden=None, multiple=256, bias=False, seed=0, ffn_dim_multiplier=None):
            Block.__init__(self, variant, d, hidden, multiple, ffn_dim_multiplier, bias, seed)
        rule = "hidden = 8/3·d rounded up to `multiple` (4096 → 11008)"
    else:
        def __init__(self, d, hidden=None, bias=False, seed=0):
            Block.__init__(self, variant, d, hidden, None, None, bias, seed)
        rule = "hidden = 4·d"
    return type(name, (Block,), {"__init__": __init__, "__module__": __name__, "__qualname__": name,
                                 "__doc__": f"{_variant_formula(variant)}: ffn's {variant}; {rule}."})


for _name, _variant in SEEDS_CLASSES.items():
    globals()[_name] = _seeds_class(_name, _variant)

_CLASS_OF_VARIANT = {variant: globals()[name] for name, variant in SEEDS_CLASSES.items()}


def _as_class_of_its_variant(core):
    return _CLASS_OF_VARIANT.get(core.variant, Block)._wrap(core)


def sparsity_threshold(a, sparsity):
    """The threshold on |a| that drops a share `sparsity` in [0, 1) of these activations
    (InferenceBlock.hidden_activations): the ⌈s·n⌉-th smallest magnitude (0 for s = 0).
    Pass it to ffn.load(..., sparse=threshold)."""
    return _core.sparsity_threshold(_to_numpy(a), float(sparsity))


def down_kept_share(a, h, threshold, down_threshold):
    """Of the (token, channel) pairs of a = hidden_activations(x) whose |a| the gate keeps
    (above `threshold`), the share whose |h| = |hidden_values(x)| down keeps too (above
    `down_threshold`): the third value of ffn.load(..., sparse=(threshold, down_threshold,
    share)), with which a token takes the sparse path by the rows it will read (1 when the
    gate keeps none, or down none of them)."""
    return _core.down_kept_share(_to_numpy(a), _to_numpy(h), float(threshold), float(down_threshold))


def load(path, layer=0, variant=None, dtype=None, sparse=None):
    """The MLP of `layer` from a checkpoint, for inference (an InferenceBlock): safetensors
    (one file, or sharded through model.safetensors.index.json), GGUF, or a folder holding
    one, in the names of any family of `ffn info --families` (Llama, Gemma, Phi-3's fused
    gate_up, GPT-NeoX, T5, BERT, …). The activation comes from config.json beside the
    weights (the keys the family's class reads) or GGUF metadata; else give `variant`. Each matrix runs in the type the file stores it in (a q8_0 GGUF as
    q8_0, a bf16 safetensors file as bf16); `dtype` (f32, bf16, f16, q8_0, q4_0) converts
    every matrix to it — one the file already stores so is used as it is, never
    re-quantised. To train the layer, use load_trainable.
    A mixture-of-experts layer (Mixtral, Qwen-MoE, OLMoE, DeepSeek-V2/V3, GLM-4.5, DBRX,
    Granite-MoE, Llama 4, gpt-oss names) loads as a MoeBlock; gpt-oss's Hugging Face release, whose experts are MXFP4 _blocks / _scales,
    runs them as mxfp4 (repacked, not dequantised). The file is opened once.
    `sparse` (a dense layer's activation-sparse decode: one token a call — Gemma 3n's sparse
    layers up to four — skips the up rows and down columns of hidden channels whose activated
    gate is small): None — on, exact, where the activation makes zeros (ReLU, ReGLU, relu2,
    relu6, Gemma 3n's sparse layers) and up and down are f32/f16/bf16; "off"; "exact"; a
    threshold on |act(gate)|, which changes the output (see sparsity_threshold); or a pair
    (threshold, down_threshold): gated blocks also leave out of down the kept channels whose
    |h| = |act(gate)·up| is at most down_threshold (hidden_values; docs/experiment.md: at
    equal bytes, less loss than the gate's threshold alone), and a third value, down_kept_share
    in (0, 1] (default 1), the share of the gate's kept channels down is expected to read
    too, by which a token's bytes are judged for the sparse path (`ffn forward
    --calibrate-down-sparsity` writes all three to ffn-sparsity.json). It holds up
    and down a second time — a block type's (q4_K, q8_0, …) as q8_0 copies along d_model,
    within half a q8_0 step of the file's values, which "exact" or a threshold asks for."""
    core = _core.load(str(path), layer, variant, dtype, sparse)
    return _BLOCK_OF_CORE[type(core)]._wrap(core)


def load_trainable(path, layer=0, variant=None):
    """The MLP of `layer` from a checkpoint as a trainable float32 Block (of its variant's
    class), every matrix widened or dequantised to float32."""
    return _as_class_of_its_variant(_core.load_trainable(str(path), layer, variant))


def _to_numpy(value):
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().float().numpy()
    return np.ascontiguousarray(value, dtype=np.float32)


def from_torch(module, variant=None):
    """A copy of a torch MLP module as an ffn block. Names: the seeds' (gate/up/down) or
    Hugging Face's (gate_proj/up_proj/down_proj, or Phi-3's and GLM-4's fused gate_up_proj,
    the gate's rows first as their modules' chunk(2) takes them). The variant comes from the
    module's class (the seeds'), or its config's hidden_activation (Gemma 2/3), hidden_act or
    activation_function (Hugging Face's LlamaMLP and kin); else give it."""
    state = {k: v for k, v in module.state_dict().items()}
    for kind in ("weight", "bias"):
        fused = state.pop(f"gate_up_proj.{kind}", None)
        if fused is not None:
            state[f"gate_proj.{kind}"], state[f"up_proj.{kind}"] = fused.chunk(2, dim=0)
    renamed = {}
    for key, value in state.items():
        for hf, ours in (("gate_proj.", "gate."), ("up_proj.", "up."), ("down_proj.", "down.")):
            if key.startswith(hf):
                key = ours + key[len(hf):]
        renamed[key] = value
    gated = "gate.weight" in renamed
    if "up.weight" not in renamed or "down.weight" not in renamed:
        raise Error(f"from_torch: no up/down (or up_proj/down_proj) weights in the module; it has {sorted(state)}")
    if variant is None:
        variant = SEEDS_CLASSES.get(type(module).__name__)
    config = getattr(module, "config", None)
    key = next((k for k in ("hidden_activation", "hidden_act", "activation_function")
                if isinstance(getattr(config, k, None), str)), None)
    if variant is None and key is not None:
        act = _core.hf_activation(getattr(config, key))
        if act is None:
            why = _core.hf_activation_refusal(getattr(config, key)) or "not an activation ffn knows"
            raise Error(f"from_torch: config.{key} {getattr(config, key)!r}: {why}")
        variant = "gated_" + act if gated else act  # gated_swish is swiglu, gated_gelu is geglu, ...
    if variant is None:
        raise Error(f"from_torch: cannot tell the activation of a {type(module).__name__}; pass variant=")
    up = renamed["up.weight"]
    hidden, d = int(up.shape[0]), int(up.shape[1])
    block = Block(variant, d, hidden=hidden, bias="up.bias" in renamed)
    if block.gated != gated:
        raise Error(f"from_torch: variant {variant!r} is {'gated' if block.gated else '2-matrix'} but the module "
                    f"{'has' if gated else 'has no'} gate projection")
    block.load_state_dict(renamed)
    return _as_class_of_its_variant(block._core)
