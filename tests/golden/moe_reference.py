"""Mixture-of-experts references for the golden tests: the Hugging Face modules restated in
PyTorch from their definitions (run in float64 for the answer; in float32 to show the bound
is sound), random layers at small shapes, checkpoint writers (HF per-expert names, the fused
3-D expert tensors of newer transformers, GGUF through gguf-py), inputs drawn away from
routing near-ties, and the f32 error bound of a MoE block's output (moe_bound).

The modules (restated, not copied):
* Mixtral `MixtralSparseMoeBlock`: logits = x·W_rᵀ; softmax (f32 in HF); top-k; the k
  weights renormalised to sum 1; y = Σ w_e·expert_e(x), expert = w2(silu(w1·x) ⊙ w3·x).
* Qwen2-MoE `Qwen2MoeSparseMoeBlock`: softmax, top-k, renormalised only if norm_topk_prob;
  plus sigmoid(shared_expert_gate·x)·shared_expert(x).
* Qwen3-MoE `Qwen3MoeSparseMoeBlock`: softmax, top-k, renormalised; no shared expert.
* DeepSeek-V3 `DeepseekV3MoE` + `DeepseekV3TopkRouter`: s = sigmoid(logits); choice =
  s + e_score_correction_bias; n_group groups of E/n_group, a group's score the sum of its
  two best choice scores; the best topk_group groups kept, the others' choice scores set to
  0.0 (HF's masked_fill); top-k of the masked choice scores; weights the un-biased s of those
  experts, divided by (their sum + 1e-20) if norm_topk_prob, times routed_scaling_factor;
  plus the shared experts (one SwiGLU of hidden moe_intermediate_size·n_shared_experts),
  added unscaled. The correction biases are drawn ≥ 0, so every choice score is > 0 and
  HF's 0.0 for a masked group never competes with a kept expert (an implementation masking
  with −inf, as llama.cpp does, must then agree).
* GLM-4.5 `Glm4MoeMoE` + `Glm4MoeTopkRouter`: DeepSeek-V3's routing and shared experts
  (the released configs: n_group 1, routed_scaling_factor 2.5, one shared expert).
* OLMoE `OlmoeSparseMoeBlock`: Qwen3-MoE's, with norm_topk_prob false by default.
* DBRX `DbrxFFN` (`DbrxRouter`, `DbrxExperts`/`DbrxExpertGLU`): softmax, top-k, the k
  weights divided by their moe_normalize_expert_weights-norm (p = 1: their sum); experts
  w1 (gate), v1 (up) and w2 each [E·H, D], expert e's rows e·H … (e+1)·H, w2 in × out:
  y = (silu(x·w1ᵀ) ⊙ x·v1ᵀ)·w2.
* Granite-MoE `GraniteMoeMoE` (`GraniteMoeTopKGating`, `GraniteMoeParallelExperts`): the k
  largest logits, softmax over those k; input_linear [E, 2H, D] whose output's chunk(2)
  gives (gate, up) in that order, output_linear [E, D, H]; Granite-MoE-Shared adds
  `GraniteMoeSharedMLP` (input_linear [2S, D] chunked the same way), added unscaled.
* Llama 4 `Llama4TextMoe` (`Llama4Router`, `Llama4TextExperts`, shared `Llama4TextMLP`): the
  top-k logits, weights σ(logit) (the others' −inf → 0); each chosen expert runs on
  weight·x — the weight multiplies the expert's INPUT — and the outputs are summed
  unweighted, plus the shared expert on x; experts.gate_up_proj [E, D, 2H] in × out whose
  chunk(2, dim=-1) gives (gate, up), experts.down_proj [E, H, D] in × out.
* DeepSeek-V2 `DeepseekV2MoE` + `DeepseekV2MoEGate`: p = softmax(logits); topk_method
  greedy (top-k of p) or group_limited_greedy (a group's score its largest p, the best
  topk_group groups kept, the others' p set to 0.0, top-k of that); weights p ×
  routed_scaling_factor, never renormalised; shared experts as DeepSeek-V3's.
"""
import dataclasses
import json
import math

import numpy as np
import torch

import bound
import files

U = bound.U
# Evaluation allowance of one exp or sigmoid in f32, in units of u, its roundings included
# (glibc's expf < 1 ulp, SLEEF 1 ulp, polynomial vector exps a few ulps; sigmoid as
# 1/(1 + exp(−z)): exp's error relative to 1 + e^−z is at most exp's own, plus the add and
# the division). 16 is generous for any of them.
EVAL_ULPS = 16
TIE_MARGIN = 1e-3  # relative gap required between the last chosen and the first rejected score


@dataclasses.dataclass(frozen=True)
class Spec:
    family: str  # mixtral | qwen2_moe | qwen3_moe | deepseek_v3 | glm4_moe | olmoe | dbrx | granitemoe
    #              | granitemoeshared | deepseek_v2 | llama4
    d: int
    hidden: int  # each routed expert's hidden width
    experts: int
    k: int
    scoring: str  # softmax | sigmoid | softmax_top_k | sigmoid_top_k (softmax with groups: DeepSeek-V2's
    #               group_limited_greedy)
    norm: bool  # renormalise the k chosen weights
    shared_hidden: int = 0  # 0: no shared expert
    shared_gated: bool = False  # Qwen2: the shared expert scaled by sigmoid(shared_expert_gate·x)
    n_shared: int = 0  # DeepSeek's n_shared_experts (shared_hidden = n_shared·hidden)
    groups: int = 1
    groups_kept: int = 1
    scale: float = 1.0  # routed_scaling_factor
    bias: bool = False  # e_score_correction_bias
    dense_hidden: int = 0  # DeepSeek's dense layer 0 (intermediate_size); a decoy elsewhere


SPECS = {
    "mixtral": Spec("mixtral", 64, 128, 8, 2, "softmax", True, dense_hidden=160),
    "qwen2_moe": Spec("qwen2_moe", 64, 96, 16, 4, "softmax", False, shared_hidden=128, shared_gated=True,
                      dense_hidden=160),
    "qwen3_moe": Spec("qwen3_moe", 64, 96, 16, 4, "softmax", True, dense_hidden=160),
    "deepseek_v3": Spec("deepseek_v3", 64, 96, 16, 4, "sigmoid", True, shared_hidden=192, n_shared=2, groups=4,
                        groups_kept=2, scale=2.5, bias=True, dense_hidden=160),
}
# The families added for issue 35 (test_moe_families.py).
SPECS.update({
    "glm4_moe": Spec("glm4_moe", 64, 96, 16, 4, "sigmoid", True, shared_hidden=96, n_shared=1, scale=2.5, bias=True,
                     dense_hidden=160),
    "olmoe": Spec("olmoe", 64, 96, 16, 4, "softmax", False),
    "dbrx": Spec("dbrx", 64, 96, 16, 4, "softmax", True),
    "granitemoe": Spec("granitemoe", 64, 96, 8, 2, "softmax_top_k", True),
    "granitemoeshared": Spec("granitemoeshared", 64, 96, 8, 2, "softmax_top_k", True, shared_hidden=128),
    "deepseek_v2": Spec("deepseek_v2", 64, 96, 16, 4, "softmax", False, shared_hidden=192, n_shared=2, groups=4,
                        groups_kept=2, scale=4.0, dense_hidden=160),
    "llama4": Spec("llama4", 64, 96, 8, 1, "sigmoid_top_k", False, shared_hidden=96, dense_hidden=160),
})
# Families whose routing weight multiplies the expert's input (Llama 4).
WEIGHT_INPUT = {"llama4"}
# Families whose layer 0 is dense (first_k_dense_replace = 1).
DENSE_FIRST = {"deepseek_v3", "glm4_moe", "deepseek_v2"}


def _f32(rng, shape, scale):
    """Random values exactly representable in f32, held as float64."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def random_layer(spec, rng):
    """One MoE layer: name → float64 array of f32 values. router [E, D]; gate, up [E, H, D];
    down [E, D, H]; shared.{gate,up,down}; shared_gate [1, D]; bias [E]."""
    D, H, E = spec.d, spec.hidden, spec.experts
    w = {"router": _f32(rng, (E, D), 2.0 / math.sqrt(D)),  # logits of a few units: a real choice
         "gate": _f32(rng, (E, H, D), 1 / math.sqrt(D)), "up": _f32(rng, (E, H, D), 1 / math.sqrt(D)),
         "down": _f32(rng, (E, D, H), 1 / math.sqrt(H))}
    if spec.shared_hidden:
        Hs = spec.shared_hidden
        w["shared.gate"] = _f32(rng, (Hs, D), 1 / math.sqrt(D))
        w["shared.up"] = _f32(rng, (Hs, D), 1 / math.sqrt(D))
        w["shared.down"] = _f32(rng, (D, Hs), 1 / math.sqrt(Hs))
    if spec.shared_gated:
        w["shared_gate"] = _f32(rng, (1, D), 1 / math.sqrt(D))
    if spec.bias:
        # ≥ 0 (see the module docstring) and large enough to change many choices.
        w["bias"] = rng.uniform(0.0, 0.5, size=E).astype(np.float32).astype(np.float64)
    return w


def random_dense(spec, rng):
    D, H = spec.d, spec.dense_hidden
    return {"dense": True, "gate": _f32(rng, (H, D), 1 / math.sqrt(D)), "up": _f32(rng, (H, D), 1 / math.sqrt(D)),
            "down": _f32(rng, (D, H), 1 / math.sqrt(H))}


def random_model(spec, seed):
    """Two layers, the MoE under test in layer 1; layer 0 dense for DeepSeek
    (first_k_dense_replace = 1), another MoE elsewhere (so a wrong --layer shows)."""
    rng = np.random.default_rng(seed)
    first = random_dense(spec, rng) if spec.family in DENSE_FIRST else random_layer(spec, rng)
    return [first, random_layer(spec, rng)]


# ---------------------------------------------------------------------------------------------
# The modules, restated in PyTorch.

class Expert(torch.nn.Module):
    """The SwiGLU MLP every family's experts (and shared experts) use: down(silu(gate·x) ⊙ up·x)."""

    def __init__(self, gate, up, down, dtype):
        super().__init__()
        self.gate = torch.as_tensor(gate, dtype=dtype)
        self.up = torch.as_tensor(up, dtype=dtype)
        self.down = torch.as_tensor(down, dtype=dtype)

    def forward(self, x):
        return (torch.nn.functional.silu(x @ self.gate.T) * (x @ self.up.T)) @ self.down.T


class SparseMoe(torch.nn.Module):
    """One MoE block of any of the four families, as its HF module computes it, in `dtype`
    (the router's softmax or sigmoid in that dtype too: f32 is what HF runs).

    `mutation` makes one deliberate mistake, to show that the error bound rejects it:
    wrong_expert (the (k+1)-th choice instead of the k-th), no_renorm, renorm (where the
    family does not), no_scale, no_shared, ungated_shared, sign (the k-th expert subtracted),
    bias_in_weights (DeepSeek's weights from the biased scores), no_bias (chosen without
    the correction bias), no_groups (DeepSeek's groups ignored), swapped_gate_up (silu
    of up instead of gate: the fused halves read the wrong way round), top2_groups
    (DeepSeek-V2's groups scored as V3's, by their two best), swapped_shared_gate_up (the
    shared expert's halves swapped), output_scaled (Llama 4's weight applied to the expert's
    output instead of its input)."""

    def __init__(self, spec, w, dtype=torch.float64, mutation=None):
        super().__init__()
        self.spec, self.dtype, self.mutation = spec, dtype, mutation
        t = lambda a: torch.as_tensor(a, dtype=dtype)
        self.router = t(w["router"])
        g, u = (w["up"], w["gate"]) if mutation == "swapped_gate_up" else (w["gate"], w["up"])
        self.experts = [Expert(g[e], u[e], w["down"][e], dtype) for e in range(spec.experts)]
        sg, su = ((w["shared.up"], w["shared.gate"]) if mutation == "swapped_shared_gate_up" else
                  (w.get("shared.gate"), w.get("shared.up")))
        self.shared = Expert(sg, su, w["shared.down"], dtype) if spec.shared_hidden else None
        self.shared_gate = t(w["shared_gate"]) if spec.shared_gated else None
        self.bias = t(w["bias"]) if spec.bias else None

    def route(self, x):
        """(expert indices [T, k] int64, weights [T, k]) of each token."""
        s, m, k = self.spec, self.mutation, self.spec.k
        logits = x @ self.router.T
        wrong = m == "wrong_expert"
        if s.scoring == "sigmoid_top_k":  # Llama 4: σ of the k largest logits
            top, idx = torch.topk(logits, k + wrong, dim=-1)
            if wrong:
                top, idx = torch.cat([top[:, :k - 1], top[:, k:]], 1), torch.cat([idx[:, :k - 1], idx[:, k:]], 1)
            weights = torch.sigmoid(top)
        elif s.scoring == "softmax_top_k":  # Granite-MoE: softmax over the k largest logits
            top, idx = torch.topk(logits, k + wrong, dim=-1)
            if wrong:
                top, idx = torch.cat([top[:, :k - 1], top[:, k:]], 1), torch.cat([idx[:, :k - 1], idx[:, k:]], 1)
            weights = (torch.softmax(top, dim=-1) if m != "no_renorm" else torch.softmax(logits, -1).gather(1, idx))
        elif s.scoring == "softmax":
            probs = torch.softmax(logits, dim=-1)
            choice = probs
            if s.groups > 1 and m != "no_groups":  # DeepSeek-V2's group_limited_greedy
                T, per = x.shape[0], s.experts // s.groups
                grouped = probs.view(T, s.groups, per)
                group_scores = (grouped.max(dim=-1).values if m != "top2_groups" else
                                torch.topk(grouped, 2, dim=-1).values.sum(dim=-1))
                kept = torch.topk(group_scores, s.groups_kept, dim=-1).indices
                mask = torch.zeros(T, s.groups, dtype=torch.bool).scatter_(1, kept, True)
                choice = probs.masked_fill(~mask.unsqueeze(-1).expand(T, s.groups, per).reshape(T, s.experts), 0.0)
            _, idx = torch.topk(choice, k + wrong, dim=-1)
            if wrong:
                idx = torch.cat([idx[:, :k - 1], idx[:, k:]], 1)
            weights = probs.gather(1, idx)
            if (s.norm and m != "no_renorm") or m == "renorm":
                weights = weights / weights.sum(dim=-1, keepdim=True)
            if m != "no_scale":
                weights = weights * s.scale
        else:
            scores = torch.sigmoid(logits)
            choice = scores + self.bias if m != "no_bias" else scores.clone()
            T = x.shape[0]
            if m != "no_groups":
                per_group = choice.view(T, s.groups, s.experts // s.groups)
                group_scores = torch.topk(per_group, 2, dim=-1).values.sum(dim=-1)
                kept = torch.topk(group_scores, s.groups_kept, dim=-1).indices
                mask = torch.zeros(T, s.groups, dtype=torch.bool).scatter_(1, kept, True)
                mask = mask.unsqueeze(-1).expand(T, s.groups, s.experts // s.groups).reshape(T, s.experts)
                choice = choice.masked_fill(~mask, 0.0)
            idx = torch.topk(choice, k + wrong, dim=-1).indices
            if wrong:
                idx = torch.cat([idx[:, :k - 1], idx[:, k:]], 1)
            weights = (scores + self.bias if m == "bias_in_weights" else scores).gather(1, idx)
            if s.norm and m != "no_renorm":
                weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
            if m != "no_scale":
                weights = weights * s.scale
        if m == "sign":
            weights = torch.cat([weights[:, :k - 1], -weights[:, k - 1:]], 1)
        return idx, weights

    def forward(self, x):
        x = torch.as_tensor(x, dtype=self.dtype)
        idx, weights = self.route(x)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):  # HF's loop over the experts that were hit
            tokens, slot = torch.nonzero(idx == e, as_tuple=True)
            if len(tokens):
                w = weights[tokens, slot, None]
                if self.spec.family in WEIGHT_INPUT and self.mutation != "output_scaled":
                    y.index_add_(0, tokens, expert(w * x[tokens]))  # Llama 4: the weight on the input
                else:
                    y.index_add_(0, tokens, w * expert(x[tokens]))
        if self.shared is not None and self.mutation != "no_shared":
            out = self.shared(x)
            if self.shared_gate is not None and self.mutation != "ungated_shared":
                out = torch.sigmoid(x @ self.shared_gate.T) * out
            y = y + out
        return y


def dense_forward(layer, x):
    x = torch.as_tensor(x, dtype=torch.float64)
    return Expert(layer["gate"], layer["up"], layer["down"], torch.float64)(x).numpy()


# ---------------------------------------------------------------------------------------------
# Inputs away from near-ties.

def _logit_error(w, x):
    """Bound on each f32 logit's error, [T, E]: a dot product of D terms, (D+1)·u·Σ|x·w_r|."""
    return (x.shape[1] + 1) * U * (np.abs(x) @ np.abs(w["router"]).T)


def selection_gaps(spec, w, x):
    """Per token, min over the selection's decisions of gap / required gap (≥ 1: safe). A
    decision is the k-th against the (k+1)-th selection score (softmax: the logits, whose
    difference is the probabilities' relative gap; DeepSeek: the masked choice scores) and,
    for DeepSeek, the topk_group-th against the next group score. The gap must exceed
    TIE_MARGIN relative and 100× the two scores' f32 error bounds."""
    logits = x @ w["router"].T
    dl = _logit_error(w, x)
    if spec.scoring == "softmax" and spec.groups > 1:
        return _softmax_group_gaps(spec, logits, dl)
    if spec.scoring in ("softmax", "softmax_top_k", "sigmoid_top_k"):  # chosen by the logits' order
        order = np.argsort(-logits, axis=1)
        a, b = np.take_along_axis(logits, order[:, spec.k - 1:spec.k + 1], 1).T
        ea, eb = np.take_along_axis(dl, order[:, spec.k - 1:spec.k + 1], 1).T
        return (a - b) / np.maximum(TIE_MARGIN, 100 * (ea + eb))
    s = 1 / (1 + np.exp(-logits))
    choice = s + w["bias"]
    err = s * (1 - s) * dl + (EVAL_ULPS + 2) * U * np.abs(choice)  # σ' ≤ s(1−s)(1+…): first order, 100× margin
    T, G, per = x.shape[0], spec.groups, spec.experts // spec.groups
    grouped, gerr = choice.reshape(T, G, per), err.reshape(T, G, per)
    top2 = np.argsort(-grouped, axis=2)[:, :, :2]
    gs = np.take_along_axis(grouped, top2, 2).sum(2)
    ge = np.take_along_axis(gerr, top2, 2).sum(2) + 2 * U * np.abs(gs)
    gorder = np.argsort(-gs, axis=1)
    group_ratio = np.inf  # every group kept: no group decision
    if spec.groups_kept < spec.groups:
        ga, gb = np.take_along_axis(gs, gorder[:, spec.groups_kept - 1:spec.groups_kept + 1], 1).T
        gea, geb = np.take_along_axis(ge, gorder[:, spec.groups_kept - 1:spec.groups_kept + 1], 1).T
        group_ratio = (ga - gb) / np.maximum(TIE_MARGIN * np.abs(ga), 100 * (gea + geb))
    keep = np.zeros((T, G), bool)
    np.put_along_axis(keep, gorder[:, :spec.groups_kept], True, 1)
    masked = np.where(np.repeat(keep, per, 1), choice, 0.0)
    order = np.argsort(-masked, axis=1)
    a, b = np.take_along_axis(masked, order[:, spec.k - 1:spec.k + 1], 1).T
    ea, eb = np.take_along_axis(err, order[:, spec.k - 1:spec.k + 1], 1).T
    expert_ratio = (a - b) / np.maximum(TIE_MARGIN * np.abs(a), 100 * (ea + eb))
    return np.minimum(group_ratio, expert_ratio)


def _softmax_group_gaps(spec, logits, dl):
    """selection_gaps for DeepSeek-V2's group_limited_greedy: the decisions are the
    topk_group-th against the next group maximum and the k-th against the (k+1)-th masked
    probability. Each p has relative error ≤ 2Δ (weight_error's softmax Δ), so a gap between
    p_a and p_b must exceed 100·2Δ·(p_a + p_b)."""
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    rel = 2 * ((dl + U * np.abs(logits - logits.max(1, keepdims=True))).max(1) + (EVAL_ULPS + 2) * U)[:, None]
    T, G, per = p.shape[0], spec.groups, spec.experts // spec.groups
    gs = p.reshape(T, G, per).max(2)
    gorder = np.argsort(-gs, axis=1)
    ga, gb = np.take_along_axis(gs, gorder[:, spec.groups_kept - 1:spec.groups_kept + 1], 1).T
    group_ratio = (ga - gb) / np.maximum(TIE_MARGIN * ga, 100 * rel[:, 0] * (ga + gb))
    keep = np.zeros((T, G), bool)
    np.put_along_axis(keep, gorder[:, :spec.groups_kept], True, 1)
    masked = np.where(np.repeat(keep, per, 1), p, 0.0)
    order = np.argsort(-masked, axis=1)
    a, b = np.take_along_axis(masked, order[:, spec.k - 1:spec.k + 1], 1).T
    expert_ratio = (a - b) / np.maximum(TIE_MARGIN * a, 100 * rel[:, 0] * (a + b))
    return np.minimum(group_ratio, expert_ratio)


def draw_inputs(spec, w, rng, tokens, scale=1.0):
    """[tokens, D] f32 inputs, each token redrawn until selection_gaps clears it."""
    x = _f32(rng, (tokens, spec.d), scale)
    for _ in range(1000):
        bad = selection_gaps(spec, w, x) < 1.0
        if not bad.any():
            return x.astype(np.float32)
        x[bad] = _f32(rng, (int(bad.sum()), spec.d), scale)
    raise RuntimeError("could not draw inputs away from routing ties")


# ---------------------------------------------------------------------------------------------
# The error bound.

def weight_error(spec, w, x):
    """Relative error bound r [T] of every routing weight of each token (the weights an f32
    router hands to the experts: softmax/sigmoid, renormalised and scaled as the family does).

    Derivation. Each f32 logit ℓ̂_j = ℓ_j + η_j, |η_j| ≤ δ_j = (D+1)·u·Σ_i|x_i·w_ji| (a dot
    product of D terms in any order). Every later step is modelled as a perturbation either
    of an exponent or of a product/sum:
    * softmax: p_j = e^{a_j} / Σ_i e^{a_i}, a_j = ℓ_j − m. The computed exponent ℓ̂_j − m̂ is
      rounded once (u·|ℓ_j − m|; the shift m itself cancels from numerator and denominator);
      exp within EVAL_ULPS·u relative, i.e. e^{a_j + ε} with |ε| ≤ EVAL_ULPS·u (ln(1+t) ≤ t);
      the division by the sum rounds once more (another u in the exponent). So each term is
      the exact exponential of ℓ_j + ε_j, |ε_j| ≤ Δ = max_j (δ_j + u·|ℓ_j − m|) + (EVAL_ULPS+1)·u.
      A ratio e^{ℓ_j+ε_j} / Σ_i c_i e^{ℓ_i+ε_i} over positive terms moves by at most e^{±Δ} in
      the numerator and e^{±Δ} in the denominator (a weighted mean of e^{ε_i}): relative
      error ≤ e^{2Δ} − 1. The sum itself, of n positive terms in any order, adds (n−1)·u.
      Unrenormalised (Qwen2 with norm_topk_prob False) the sum is the full softmax's: n = E.
      Renormalised, the full sum is a common factor of the k weights and cancels exactly;
      only the k-term sum and its division remain: n = k (the same if an implementation
      takes the softmax of the k chosen logits alone).
    * sigmoid (DeepSeek): d ln σ / dℓ = 1 − σ(ℓ), and 1 − σ(ℓ + t) ≤ (1 − σ(ℓ))·e^{|t|}, so η_j
      moves ln s_j by ≤ (1 − s_j)·δ_j·e^{δ_j}; the f32 evaluation 1/(1 + e^{−ℓ}) adds
      ≤ EVAL_ULPS·u relative: |ε_j| ≤ Δ = max_j (1 − s_j)·δ_j·e^{δ_j} + EVAL_ULPS·u.
      Renormalised by a sum of k positive terms (the 1e-20 is below f32's resolution at
      these sums and below 1e-19 relative in the reference): e^{2Δ}, n = k; not
      renormalised: e^{Δ} ≤ e^{2Δ}, n = 0.
    * the routed scaling factor: one rounding (u).
    Altogether r = e^{2Δ}·(1 + u)^{n+2} − 1 ≈ 2Δ + (n+2)·u: the 2·max δℓ + O(E·u) of the
    brief, the (n+2)·u being the sums, the division and the scale."""
    logits = x @ w["router"].T
    dl = _logit_error(w, x)
    if spec.scoring in ("softmax", "softmax_top_k"):  # softmax_top_k: a renormalised softmax's weights
        delta = (dl + U * np.abs(logits - logits.max(1, keepdims=True))).max(1) + (EVAL_ULPS + 1) * U
        n = spec.k if spec.norm else spec.experts
    else:  # sigmoid, sigmoid_top_k
        s = 1 / (1 + np.exp(-logits))
        delta = ((1 - s) * dl * np.exp(dl)).max(1) + EVAL_ULPS * U
        n = spec.k if spec.norm else 0
    return np.exp(2 * delta) * (1 + U) ** (n + 2) - 1


def shared_gate_error(w, x):
    """Relative error bound of Qwen2's sigmoid(shared_expert_gate·x), [T]: the dot product's
    δ (as a logit) plus the sigmoid's evaluation (weight_error's sigmoid case, unnormalised)."""
    d = (x.shape[1] + 1) * U * (np.abs(x) @ np.abs(w["shared_gate"]).T)[:, 0]
    return np.exp(d + EVAL_ULPS * U) * (1 + U) - 1


def _expert_state(w, e):
    return {"gate.weight": w["gate"][e], "up.weight": w["up"][e], "down.weight": w["down"][e]}


def _shared_state(w):
    return {"gate.weight": w["shared.gate"], "up.weight": w["shared.up"], "down.weight": w["shared.down"]}


def expert_bound(state, x, q8_0=False, operand_rounding=0.0):
    """bound.forward_and_bound of one SwiGLU expert; with quantised weights, plus the
    activation term of bound.quantisation_bound: q8_0 True (x and h in blocks of 32, q8_0
    weights), or (x_block, h_block) — (256, 256) for K-quant gate/up and down.
    operand_rounding: as bound.forward_and_bound (2**-8 for bf16 weights dotted with bf16
    activations on avx512_bf16)."""
    y, b = bound.forward_and_bound(state, x, "swish", True, operand_rounding)
    if q8_0:
        blocks = (32, 32) if q8_0 is True else q8_0
        b = b + bound.quantisation_bound(state, x, "swish", True, *blocks)
    return y, b


def moe_bound(spec, w, x, idx=None, weights=None, q8_0=False, operand_rounding=0.0):
    """(y_ref [T, D], bound [T, D], routing weights' relative bound r [T]) in float64 for the
    f32 inputs x, the routing (idx, weights) the float64 module chose (given, or computed).

    y = Σ_j ŵ_j·ŷ_j (+ the shared term), each expert's ŷ_j = y_j + e_j with |e_j| ≤ B_j (the
    dense bound of bound.py for that expert and token) and ŵ_j = w_j(1 + ρ_j), |ρ_j| ≤ r:
      |ŵ_j ŷ_j − w_j y_j| ≤ |w_j|(1+r)·B_j + r·|w_j|·|y_j|;
    the n products and their sum in f32 (any order; n = k, +1 with a shared expert) add
    ≤ (n+1)·u·Σ_j |ŵ_j|(|y_j| + B_j). An implementation that folds w_j into h before the
    down projection rounds each term of that dot product once more: u·|w|·Σ|W_down||h|,
    which the dense bound's factor 2 over its (hidden+1)·u·Σ|W_down||h| already covers.
    Qwen2's shared term is a weight of its own (shared_gate_error); DeepSeek's has weight 1."""
    x = np.asarray(x, dtype=np.float64)
    if idx is None:
        with torch.no_grad():
            i, wt = SparseMoe(spec, w).route(torch.from_numpy(x))
        idx, weights = i.numpy(), wt.numpy()
    r = weight_error(spec, w, x)
    T = x.shape[0]
    y = np.zeros_like(x)
    err = np.zeros_like(x)
    mag = np.zeros_like(x)
    for e in range(spec.experts):
        tokens, slot = np.nonzero(idx == e)
        if len(tokens) == 0:
            continue
        if spec.family in WEIGHT_INPUT:
            ye, be = _weighted_input_bound(w, e, x[tokens], weights[tokens, slot][:, None], r[tokens][:, None],
                                           q8_0, operand_rounding)
            np.add.at(y, tokens, ye)
            np.add.at(err, tokens, be)
            np.add.at(mag, tokens, np.abs(ye) + be)
            continue
        ye, be = expert_bound(_expert_state(w, e), x[tokens], q8_0, operand_rounding)
        we = weights[tokens, slot][:, None]
        re = r[tokens][:, None]
        np.add.at(y, tokens, we * ye)
        np.add.at(err, tokens, np.abs(we) * (1 + re) * be + re * np.abs(we) * np.abs(ye))
        np.add.at(mag, tokens, np.abs(we) * (1 + re) * (np.abs(ye) + be))
    n = spec.k
    if spec.shared_hidden:
        n += 1
        ys, bs = expert_bound(_shared_state(w), x, q8_0, operand_rounding)
        if spec.shared_gated:
            g = 1 / (1 + np.exp(-(x @ w["shared_gate"].T)))
            rs = shared_gate_error(w, x)[:, None]
        else:
            g, rs = np.ones((T, 1)), np.zeros((T, 1))
        y += g * ys
        err += g * (1 + rs) * bs + rs * g * np.abs(ys)
        mag += g * (1 + rs) * (np.abs(ys) + bs)
    return y, err + (n + 1) * U * mag + 2.0**-126, r


def _weighted_input_bound(w, e, x, wt, r, q8_0, operand_rounding):
    """(y, bound) of Llama 4's expert e on wt·x (rows of x, their weights wt [n, 1], the
    weights' relative bound r [n, 1]). The f32 code runs the expert on fl(ŵ·x) = wt·x·(1 + ρ),
    |ρ| ≤ r + u (ŵ's error and the product's rounding): the dense bound of bound.py at the
    exact input wt·x, plus the input's perturbation through the expert, to first order
    |ρ|·|W_down|·(|silu'(g)·g ⊙ u| + |silu(g) ⊙ u|) (g, u the gate and up outputs: the
    derivative of f(α·x') at α = 1), doubled to cover the second order (ρ ~ 1e-5)."""
    xin = wt * x
    y, b = expert_bound(_expert_state(w, e), xin, q8_0, operand_rounding)
    g, u = xin @ w["gate"][e].T, xin @ w["up"][e].T
    sg = 1 / (1 + np.exp(-g))
    d_silu = sg * (1 + g * (1 - sg))
    jac = (np.abs(d_silu * g * u) + np.abs(g * sg * u)) @ np.abs(w["down"][e]).T
    return y, b + 2 * (r + U) * jac


def dense_bound(layer, x, q8_0=False):
    state = {"gate.weight": layer["gate"], "up.weight": layer["up"], "down.weight": layer["down"]}
    return expert_bound(state, np.asarray(x, dtype=np.float64), q8_0)


# ---------------------------------------------------------------------------------------------
# Checkpoint writers.

def hf_config(spec, layers=2):
    c = {"hidden_size": spec.d, "num_hidden_layers": layers, "hidden_act": "silu", "num_experts_per_tok": spec.k}
    if spec.family == "mixtral":
        c.update(model_type="mixtral", architectures=["MixtralForCausalLM"], intermediate_size=spec.hidden,
                 num_local_experts=spec.experts)
    elif spec.family in ("qwen2_moe", "qwen3_moe"):
        arch = {"qwen2_moe": "Qwen2MoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM"}[spec.family]
        c.update(model_type=spec.family, architectures=[arch], intermediate_size=spec.dense_hidden,
                 moe_intermediate_size=spec.hidden, num_experts=spec.experts, norm_topk_prob=spec.norm,
                 decoder_sparse_step=1, mlp_only_layers=[])
        if spec.shared_hidden:
            c["shared_expert_intermediate_size"] = spec.shared_hidden
    elif spec.family == "olmoe":  # OlmoeConfig: the experts' hidden is intermediate_size
        c.update(model_type="olmoe", architectures=["OlmoeForCausalLM"], intermediate_size=spec.hidden,
                 num_experts=spec.experts, norm_topk_prob=spec.norm, output_router_logits=False,
                 router_aux_loss_coef=0.01)
    elif spec.family == "dbrx":  # DbrxConfig: the MoE fields in ffn_config, no hidden_act
        del c["hidden_act"], c["num_experts_per_tok"], c["hidden_size"], c["num_hidden_layers"]
        c.update(model_type="dbrx", architectures=["DbrxForCausalLM"], d_model=spec.d, n_layers=layers, n_heads=4,
                 max_seq_len=128, attn_config={"clip_qkv": 8, "kv_n_heads": 1, "rope_theta": 500000.0},
                 ffn_config={"ffn_act_fn": {"name": "silu"}, "ffn_hidden_size": spec.hidden,
                             "moe_jitter_eps": 0.0, "moe_loss_weight": 0.05, "moe_normalize_expert_weights": 1.0,
                             "moe_num_experts": spec.experts, "moe_top_k": spec.k})
    elif spec.family in ("granitemoe", "granitemoeshared"):
        arch = {"granitemoe": "GraniteMoeForCausalLM", "granitemoeshared": "GraniteMoeSharedForCausalLM"}[spec.family]
        c.update(model_type=spec.family, architectures=[arch], intermediate_size=spec.hidden,
                 num_local_experts=spec.experts, embedding_multiplier=12.0, residual_multiplier=0.22)
        if spec.shared_hidden:
            c["shared_intermediate_size"] = spec.shared_hidden
    elif spec.family == "llama4":  # Llama4TextConfig: experts' and shared expert's hidden intermediate_size
        c.update(model_type="llama4_text", architectures=["Llama4ForCausalLM"], intermediate_size=spec.hidden,
                 intermediate_size_mlp=spec.dense_hidden, num_local_experts=spec.experts,
                 interleave_moe_layer_step=1, router_aux_loss_coef=0.001)
    elif spec.family == "deepseek_v2":  # DeepseekV2Config
        c.update(model_type="deepseek_v2", architectures=["DeepseekV2ForCausalLM"], intermediate_size=spec.dense_hidden,
                 moe_intermediate_size=spec.hidden, n_routed_experts=spec.experts, n_shared_experts=spec.n_shared,
                 n_group=spec.groups, topk_group=spec.groups_kept, routed_scaling_factor=spec.scale,
                 norm_topk_prob=False, scoring_func="softmax",
                 topk_method="group_limited_greedy" if spec.groups > 1 else "greedy", first_k_dense_replace=1,
                 moe_layer_freq=1)
    else:
        model_type = "glm4_moe" if spec.family == "glm4_moe" else "deepseek_v3"
        arch = {"glm4_moe": "Glm4MoeForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM"}[model_type]
        c.update(model_type=model_type, architectures=[arch], intermediate_size=spec.dense_hidden,
                 moe_intermediate_size=spec.hidden, n_routed_experts=spec.experts, n_shared_experts=spec.n_shared,
                 n_group=spec.groups, topk_group=spec.groups_kept, routed_scaling_factor=spec.scale,
                 norm_topk_prob=spec.norm, first_k_dense_replace=1)
        if model_type == "deepseek_v3":
            c.update(scoring_func="sigmoid", topk_method="noaux_tc", moe_layer_freq=1)
    return c


def hf_tensors(spec, layers, fused=False):
    """name → f32 torch tensor, in HF's names (per-expert, or the fused 3-D expert tensors)."""
    out = {}
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    if spec.family == "dbrx":
        return _dbrx_tensors(spec, layers, t)
    if spec.family in ("granitemoe", "granitemoeshared"):
        return _granite_tensors(spec, layers, t)
    if spec.family == "llama4":
        return llama4_tensors(spec, layers, t)
    for n, w in enumerate(layers):
        if w.get("dense"):
            for m in ("gate", "up", "down"):
                out[f"model.layers.{n}.mlp.{m}_proj.weight"] = t(w[m])
            continue
        mixtral = spec.family == "mixtral"
        p = f"model.layers.{n}.block_sparse_moe." if mixtral and not fused else f"model.layers.{n}.mlp."
        out[p + "gate.weight"] = t(w["router"])
        if spec.bias:
            out[p + "gate.e_score_correction_bias"] = t(w["bias"])
        if fused:
            out[p + "experts.gate_up_proj"] = t(np.concatenate([w["gate"], w["up"]], axis=1))
            out[p + "experts.down_proj"] = t(w["down"])
        else:
            names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
            for e in range(spec.experts):
                for m, name in zip(("gate", "up", "down"), names):
                    out[p + f"experts.{e}.{name}.weight"] = t(w[m][e])
        if spec.shared_hidden:
            s = "shared_expert" if spec.family == "qwen2_moe" else "shared_experts"  # DeepSeek, GLM-4.5
            for m in ("gate", "up", "down"):
                out[p + f"{s}.{m}_proj.weight"] = t(w[f"shared.{m}"])
        if spec.shared_gated:
            out[p + "shared_expert_gate.weight"] = t(w["shared_gate"])
    return out


def _dbrx_tensors(spec, layers, t):
    """DbrxForCausalLM's names: transformer.blocks.N.ffn.router.layer.weight [E, D] and
    ffn.experts.mlp.{w1, v1, w2} [E·H, D] (w2 expert by expert in × out)."""
    E, H, D = spec.experts, spec.hidden, spec.d
    out = {}
    for n, w in enumerate(layers):
        p = f"transformer.blocks.{n}.ffn."
        out[p + "router.layer.weight"] = t(w["router"])
        out[p + "experts.mlp.w1"] = t(w["gate"].reshape(E * H, D))
        out[p + "experts.mlp.v1"] = t(w["up"].reshape(E * H, D))
        out[p + "experts.mlp.w2"] = t(w["down"].transpose(0, 2, 1).reshape(E * H, D))
    return out


def llama4_tensors(spec, layers, t, prefix="model.", swap_halves=False):
    """Llama4ForCausalLM's names (prefix "model."; Llama4ForConditionalGeneration's
    "language_model.model."): layers.N.feed_forward.router.weight [E, D],
    feed_forward.experts.gate_up_proj [E, D, 2H] in × out (gate the first H columns),
    experts.down_proj [E, H, D] in × out, shared_expert.{gate,up,down}_proj.weight.
    swap_halves: up first (a wrong-layout twin)."""
    out = {}
    for n, w in enumerate(layers):
        p = f"{prefix}layers.{n}.feed_forward."
        first, second = ("up", "gate") if swap_halves else ("gate", "up")
        out[p + "router.weight"] = t(w["router"])
        out[p + "experts.gate_up_proj"] = t(np.concatenate([w[first], w[second]], axis=1).transpose(0, 2, 1))
        out[p + "experts.down_proj"] = t(w["down"].transpose(0, 2, 1))
        for m in ("gate", "up", "down"):
            out[p + f"shared_expert.{m}_proj.weight"] = t(w[f"shared.{m}"])
    return out


def _granite_tensors(spec, layers, t, swap_halves=False):
    """GraniteMoeForCausalLM's (and GraniteMoeShared's) names: block_sparse_moe.router.layer
    .weight [E, D], block_sparse_moe.input_linear.weight [E, 2H, D] (gate rows first: the
    module's chunk(2) of its output gives gate, then up), output_linear.weight [E, D, H];
    shared_mlp.input_linear.weight [2S, D] and shared_mlp.output_linear.weight [D, S].
    swap_halves: up rows first (a wrong-layout twin)."""
    out = {}
    for n, w in enumerate(layers):
        p = f"model.layers.{n}."
        first, second = ("up", "gate") if swap_halves else ("gate", "up")
        out[p + "block_sparse_moe.router.layer.weight"] = t(w["router"])
        out[p + "block_sparse_moe.input_linear.weight"] = t(np.concatenate([w[first], w[second]], axis=1))
        out[p + "block_sparse_moe.output_linear.weight"] = t(w["down"])
        if spec.shared_hidden:
            out[p + "shared_mlp.input_linear.weight"] = t(np.concatenate([w[f"shared.{first}"], w[f"shared.{second}"]]))
            out[p + "shared_mlp.output_linear.weight"] = t(w["shared.down"])
    return out


def write_hf(folder, spec, layers, fused=False, config=None, tensors=None):
    """model.safetensors and config.json in `folder`; `config`/`tensors` override (hostile
    files). Returns the safetensors path."""
    folder.mkdir(parents=True, exist_ok=True)
    files.write_safetensors(folder / "model.safetensors", tensors if tensors is not None else
                            hf_tensors(spec, layers, fused))
    (folder / "config.json").write_text(json.dumps(config if config is not None else hf_config(spec, len(layers))))
    return folder / "model.safetensors"


GGUF_ARCH = {"mixtral": "llama", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "deepseek_v3": "deepseek2",
             "olmoe": "olmoe", "dbrx": "dbrx", "granitemoe": "granitemoe", "granitemoeshared": "granitemoe",
             "glm4_moe": "glm4moe", "deepseek_v2": "deepseek2", "llama4": "llama4"}


def write_gguf(path, spec, layers, qtype=None, drop=(), quantiser=None):
    """A GGUF file as llama.cpp's converter names a MoE model's feed-forward tensors (arrays
    in PyTorch order: gguf-py stores ggml's ne reversed, e.g. ffn_gate_exps [E, H, D] → ne
    {D, H, E}). qtype (a gguf.GGMLQuantizationType, e.g. Q8_0) quantises the expert, shared
    and dense matrices with gguf.quantize; the router, the shared gate and the bias stay
    f32 as llama.cpp keeps them. Returns the layers as stored (dequantised: the reference's
    weights). `drop`: tensor names left out (hostile files). `quantiser(a, matrix)` (matrix
    gate, up or down; a float32 [rows, n]) → (raw uint8 [rows, bytes], its
    GGMLQuantizationType) quantises them instead, one type per matrix (K-quant mixes)."""
    import gguf

    wr = gguf.GGUFWriter(str(path), GGUF_ARCH[spec.family])
    wr.add_block_count(len(layers))
    wr.add_context_length(128)
    wr.add_embedding_length(spec.d)
    wr.add_expert_count(spec.experts)
    wr.add_expert_used_count(spec.k)
    if spec.family in ("mixtral", "olmoe", "dbrx", "granitemoe", "granitemoeshared"):
        wr.add_feed_forward_length(spec.hidden)  # these converters write the experts' hidden here
    else:
        wr.add_feed_forward_length(spec.dense_hidden)
        wr.add_expert_feed_forward_length(spec.hidden)
    if spec.family in ("qwen2_moe", "granitemoeshared"):
        wr.add_expert_shared_feed_forward_length(spec.shared_hidden)
    if spec.family == "deepseek_v2":  # DeepseekV2Model's converter: no gating func, norm or groups
        assert spec.groups == 1, "llama.cpp's converter writes no groups for DeepSeek-V2: its GGUF is greedy"
        wr.add_leading_dense_block_count(1)
        wr.add_expert_shared_count(spec.n_shared)
        wr.add_expert_weights_scale(spec.scale)
    if spec.family == "glm4_moe":  # Glm4MoeModel's converter (no groups: GLM-4.5 has one)
        wr.add_leading_dense_block_count(1)
        wr.add_expert_shared_count(spec.n_shared)
        wr.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        wr.add_expert_weights_scale(spec.scale)
        wr.add_expert_weights_norm(spec.norm)
    if spec.family == "deepseek_v3":
        wr.add_leading_dense_block_count(1)
        wr.add_expert_shared_count(spec.n_shared)
        wr.add_expert_weights_scale(spec.scale)
        wr.add_expert_weights_norm(spec.norm)
        wr.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        wr.add_expert_group_count(spec.groups)
        wr.add_expert_group_used_count(spec.groups_kept)
    stored = []

    def add(name, a, quantise, matrix=None):
        a = np.ascontiguousarray(a, dtype=np.float32)
        if name in drop:
            return a.astype(np.float64)
        if quantise and (qtype is not None or quantiser is not None):
            if quantiser is not None:
                raw, qt = quantiser(a.reshape(-1, a.shape[-1]), matrix)
                raw = raw.reshape(*a.shape[:-1], -1)
            else:
                raw, qt = gguf.quants.quantize(a, qtype), qtype
            wr.add_tensor(name, raw, raw_dtype=qt)
            return gguf.quants.dequantize(raw, qt).astype(np.float64).reshape(a.shape)
        wr.add_tensor(name, a)
        return a.astype(np.float64)

    for n, w in enumerate(layers):
        b = f"blk.{n}."
        if w.get("dense"):
            stored.append({"dense": True, **{m: add(b + f"ffn_{m}.weight", w[m], True, m) for m in ("gate", "up", "down")}})
            continue
        s = {"router": add(b + "ffn_gate_inp.weight", w["router"], False)}
        for m in ("gate", "up", "down"):
            s[m] = add(b + f"ffn_{m}_exps.weight", w[m], True, m)
        if spec.shared_hidden:
            for m in ("gate", "up", "down"):
                s[f"shared.{m}"] = add(b + f"ffn_{m}_shexp.weight", w[f"shared.{m}"], True, m)
        if spec.shared_gated:
            s["shared_gate"] = add(b + "ffn_gate_inp_shexp.weight", w["shared_gate"][0], False)[None, :]
        if spec.bias:
            s["bias"] = add(b + "exp_probs_b.bias", w["bias"], False)
        stored.append(s)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return stored


def quantised_forward(spec, w, x, idx, weights, roundtrip=None):
    """The routed experts' output with x and each expert's h quantised as ggml quantises a
    product's activations — `roundtrip` (f32 rows → their values; default q8_0,
    quant_ref.q8_0_roundtrip; q8_K for K-quant weights) — float64 otherwise, the routing
    given: what a quantised forward computes up to summation order (the worst-case
    quantisation term of expert_bound grows with the width and is of the order of |y| here,
    so this is the sharp check)."""
    import quant_ref

    roundtrip = roundtrip or quant_ref.q8_0_roundtrip
    assert not spec.shared_hidden, "routed experts only"
    x8 = roundtrip(np.asarray(x, dtype=np.float32)).astype(np.float64)
    y = np.zeros(x8.shape)
    for e in range(spec.experts):
        tokens, slot = np.nonzero(idx == e)
        if len(tokens):
            g, u = x8[tokens] @ w["gate"][e].T, x8[tokens] @ w["up"][e].T
            h = roundtrip((g / (1 + np.exp(-g)) * u).astype(np.float32)).astype(np.float64)
            np.add.at(y, tokens, weights[tokens, slot][:, None] * (h @ w["down"][e].T))
    return y
