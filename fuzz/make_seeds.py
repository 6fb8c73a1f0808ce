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
st, gg, npy = (out / "fuzz_safetensors", out / "fuzz_gguf", out / "fuzz_npy")
for d in (st, gg, npy):
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
print(f"seed corpora in {out}: {sum(len(os.listdir(d)) for d in (st, gg, npy))} files")
