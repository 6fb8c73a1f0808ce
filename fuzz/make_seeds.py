"""Seed corpora for the fuzz targets: valid files of every dtype and naming scheme, plus
known-bad ones (truncated, lying headers). Usage: make_seeds.py OUT_DIR FFN_BIN"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "golden"))
import files  # noqa: E402
import seeds  # noqa: E402

out = pathlib.Path(sys.argv[1])
ffn = sys.argv[2]
st, gg, npy, idx, cli = (out / "fuzz_safetensors", out / "fuzz_gguf", out / "fuzz_npy", out / "fuzz_index",
                         out / "fuzz_cli")
corpora = (st, gg, npy, idx, cli)
for d in corpora:
    d.mkdir(parents=True, exist_ok=True)

torch.manual_seed(0)
block = seeds.SwiGLU(32, hidden=64, bias=True)
for dtype, tag in [(torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")]:
    files.write_safetensors(st / f"seeds-{tag}.safetensors", {k: v.to(dtype) for k, v in block.state_dict().items()})
hf = {f"model.layers.0.mlp.{k.split('.')[0]}_proj.weight": v for k, v in block.state_dict().items() if "weight" in k}
files.write_safetensors(st / "hf.safetensors", hf, metadata={"format": "pt"})
gpt2 = seeds.GeluTanhMLP(32, hidden=64, bias=True)
files.write_safetensors(st / "gpt2.safetensors", {"h.0.mlp.c_fc.weight": gpt2.up.weight.t().contiguous(),
                                                  "h.0.mlp.c_fc.bias": gpt2.up.bias,
                                                  "h.0.mlp.c_proj.weight": gpt2.down.weight.t().contiguous(),
                                                  "h.0.mlp.c_proj.bias": gpt2.down.bias})
good = (st / "seeds-f32.safetensors").read_bytes()
(st / "truncated.safetensors").write_bytes(good[: len(good) // 2])
(st / "header-lies.safetensors").write_bytes((10**6).to_bytes(8, "little") + good[8:])

work = out / "tmp"
work.mkdir(exist_ok=True)
files.write_safetensors(work / "model.safetensors", hf)
(work / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
for t in ["f32", "f16", "bf16", "q8_0", "q4_0"]:
    subprocess.run([ffn, "quantize", work / "model.safetensors", gg / f"{t}.gguf", "--type", t], check=True,
                   capture_output=True)
g = (gg / "q8_0.gguf").read_bytes()
(gg / "truncated.gguf").write_bytes(g[: len(g) // 3])

for shape in [(3, 4), (5,), ()]:
    np.save(npy / f"a{len(shape)}.npy", np.ones(shape, np.float32))
(npy / "f8.npy").write_bytes((npy / "a2.npy").read_bytes().replace(b"<f4", b"<f8"))

# fuzz_index: "\n----\n" separates the index, shards 1.safetensors .. 4.safetensors and a
# config.json (fuzz/fuzz_index.cpp).
SEP = b"\n----\n"


def index_input(weight_map, shards, config=None):
    parts = [json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2).encode()]
    for i, tensors in enumerate(shards, start=1):
        files.write_safetensors(work / "shard.safetensors", tensors)
        parts.append((work / "shard.safetensors").read_bytes())
    if config is not None:
        parts += [b""] * (5 - len(parts)) + [json.dumps(config).encode()]
    return SEP.join(parts)


names = list(hf)
two_layers = dict(hf, **{k.replace(".0.", ".1."): v for k, v in hf.items()})
shard_a = {k: v for k, v in two_layers.items() if "gate" in k or "up" in k}
shard_b = {k: v for k, v in two_layers.items() if k not in shard_a}
wmap = {k: ("1.safetensors" if k in shard_a else "2.safetensors") for k in two_layers}
(idx / "two-shards.bin").write_bytes(index_input(wmap, [shard_a, shard_b], {"hidden_act": "silu"}))
(idx / "two-shards-no-config.bin").write_bytes(index_input(wmap, [shard_a, shard_b]))
(idx / "one-shard-f16.bin").write_bytes(
    index_input({k: "1.safetensors" for k in hf}, [{k: v.half() for k, v in hf.items()}], {"hidden_act": "gelu"}))
(idx / "missing-tensor.bin").write_bytes(index_input(wmap, [shard_a, {names[0]: hf[names[0]]}]))
(idx / "missing-shard.bin").write_bytes(index_input(wmap, [shard_a]))
(idx / "parent-dir.bin").write_bytes(index_input({names[0]: ".."}, [hf]))
(idx / "not-an-object.bin").write_bytes(b'{"weight_map": ["1.safetensors"]}' + SEP + good)
(idx / "bad-json.bin").write_bytes(b'{"weight_map": {"up.weight": "1.safe' + SEP + good)
(idx / "truncated-shard.bin").write_bytes(index_input(wmap, [shard_a, shard_b])[:-100])

# fuzz_cli: arguments separated by newlines; the working folder holds w.safetensors
# (SwiGLU, d 32, hidden 64), config.json and x.npy ([2, 32]) (fuzz/fuzz_cli.cpp).
command_lines = [
    ["--help"], ["--version"], ["params"], ["params", "--d", "4096", "--multiple", "256"], ["params", "--d", "0"],
    ["info", "--preset", "llama2-7b"], ["info", "--preset", "gpt2", "--json"],
    ["info", "--variant", "swiglu", "--d", "4096", "--multiple-of", "1024", "--ffn-dim-multiplier", "1.3"],
    ["info", "--variant", "gelu", "--d", "768", "--hidden", "3072", "--bias", "--json"],
    ["forward", "--weights", "w.safetensors", "--input", "x.npy", "--output", "y.npy"],
    ["forward", "--weights", ".", "--variant", "swiglu", "--input", "x.npy", "--output", "y.npy", "--threads", "2"],
    ["forward", "--weights", "w.safetensors", "--dtype", "q4_0", "--layer", "0", "--input", "x.npy", "--output",
     "y.npy", "--quiet"],
    ["forward", "--weights", "x.npy", "--input", "w.safetensors", "--output", "y.npy"],
    ["quantize", "w.safetensors", "o.gguf", "--type", "q8_0", "--tokens", "4", "--threads", "1"],
    ["quantize", "w.safetensors", "o.gguf", "--type", "bf16", "--all-layers", "--variant", "swiglu"],
    ["quantize", "w.safetensors", "w.safetensors", "--type", "f16"],
    ["bench", "--help"], ["compare", "--help"], ["demo", "--help"], ["forward", "--help"], ["quantize", "-h"],
]
for i, args in enumerate(command_lines):
    (cli / f"{i:02d}-{args[0].strip('-')}.txt").write_bytes("\n".join(args).encode())
(cli / "nul-separated.txt").write_bytes(b"\0".join([b"params", b"--d", b"64"]))
print(f"seed corpora in {out}: {sum(len(os.listdir(d)) for d in corpora)} files")
