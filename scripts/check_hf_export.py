#!/usr/bin/env python3
"""Checks with transformers that the Hugging Face model directories zerotrain writes load with
from_pretrained, and writes the fixture that lets CI compare zerotrain's model with transformers'.

For each small model below, zerotrain (the binary given) trains it a few steps on the shipped
corpus with a checkpoint and training.save_final, and `zerotrain export` writes the checkpoint
again (sharded with a small --max-shard-size for one of them). Then, with transformers:
  - the two directories hold the same config.json and the same tensors, bit for bit;
  - from_pretrained loads each with no missing, unexpected or mismatched tensor (a tied head tied);
  - both compute the same logits.
Writes OUT_DIR/<name>/: the exported directory as zerotrain wrote it, and
transformers_logits.safetensors (the layout of tests/fixtures/torch):
  inputs  int32 [B, T]     token ids
  logits  float32 [B, T, V]   transformers' logits from the saved weights, computed in float64
  __metadata__: model (zerotrain's model block, JSON), dtype, max_shard_bytes (the export's options)
tests/ckpt/test_hf_export_fixtures.cpp runs zerotrain's forward on those weights against these
logits, and checks that zerotrain still writes exactly these files for them.

Dev-only: needs torch 2.x and transformers (a virtual environment); CI does not.
Usage: python3 scripts/check_hf_export.py --zerotrain build/zerotrain [--out-dir tests/fixtures/hf_export]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file

from make_torch_fixtures import write_safetensors

B, T = 2, 16
SEED = 20250612
STEPS = 10

# zerotrain's model blocks (docs/config.md); the dtype of save_final and export; the export's shard
# limit. Random inits leave unit norms and zero biases, so training runs with a large learning rate
# until every tensor moved (a swapped q_norm/k_norm or a lost bias would show).
MODELS = {
    # Llama 3: grouped-query attention 4/2, llama3 rope scaling, tied head, saved in bf16.
    "llama3": dict(model=dict(preset="custom", model_type="llama", n_layer=2, n_head=4, n_kv_head=2, head_dim=8,
                              d_model=32, d_ff=64, vocab_size=300, max_seq_len=64, norm_eps=1e-5,
                              rope_theta=500000.0,
                              rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                high_freq_factor=4.0, original_max_position_embeddings=32),
                              tie_word_embeddings=True),
                   dtype="bf16", max_shard_size="5GB"),
    # Qwen2: q/k/v biases, multi-query attention, untied head; fp32, in shards of at most 16 kB.
    "qwen2": dict(model=dict(preset="custom", model_type="qwen2", n_layer=1, n_head=4, n_kv_head=1, head_dim=8,
                             d_model=32, d_ff=48, vocab_size=300, max_seq_len=64, norm_eps=1e-6,
                             rope_theta=1000000.0, tie_word_embeddings=False),
                  dtype="fp32", max_shard_size="16kB"),
    # Qwen3: q/k norms, head_dim 12 with 4 heads (48 != d_model 32), attention_bias, tied; fp16.
    "qwen3": dict(model=dict(preset="custom", model_type="qwen3", n_layer=2, n_head=4, n_kv_head=2, head_dim=12,
                             d_model=32, d_ff=48, vocab_size=300, max_seq_len=64, norm_eps=1e-6,
                             rope_theta=1000000.0, attention_bias=True, tie_word_embeddings=True),
                  dtype="fp16", max_shard_size="5GB"),
}


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}")


def weight_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))


def tensors_of(d):
    out = {}
    for f in weight_files(d):
        out.update(load_file(os.path.join(d, f)))
    return out


def load(d):
    kwargs = dict(output_loading_info=True, attn_implementation="eager")
    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model, info = transformers.AutoModelForCausalLM.from_pretrained(d, **kwargs, **{dtype_key: torch.float64})
    problems = {k: v for k, v in info.items() if v}
    if problems:
        sys.exit(f"{d}: from_pretrained reports {problems}")
    if model.config.tie_word_embeddings and model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        sys.exit(f"{d}: the head is not tied to the embedding")
    return model.eval()


def check(name, spec, zerotrain, work, out_dir):
    d = os.path.join(work, name)
    os.makedirs(d)
    model_file = os.path.join(d, "model.json")
    with open(model_file, "w") as f:
        json.dump(spec["model"], f)
    final, ckpt, exported = (os.path.join(d, x) for x in ("final", "ckpt", "exported"))
    run([zerotrain, "--model", model_file, "--steps", str(STEPS), "--log-level", "warn",
         "--set", "training.lr=0.02", "--set", "training.eval_interval=0", "--set", "data.seq_len=32",
         "--set", f"training.save_final={final}", "--set", f"training.save_dtype={spec['dtype']}",
         "--set", f"training.checkpoint_dir={ckpt}"])
    run([zerotrain, "export", ckpt, "-o", exported, "--dtype", spec["dtype"],
         "--max-shard-size", spec["max_shard_size"]])

    with open(os.path.join(final, "config.json")) as a, open(os.path.join(exported, "config.json")) as b:
        if json.load(a) != json.load(b):
            sys.exit(f"{name}: save_final and export wrote different config.json")
    saved, again = tensors_of(final), tensors_of(exported)
    if saved.keys() != again.keys() or any(not torch.equal(saved[k], again[k]) for k in saved):
        sys.exit(f"{name}: save_final and export wrote different tensors")
    sharded = len(weight_files(exported)) > 1
    if sharded != os.path.exists(os.path.join(exported, "model.safetensors.index.json")):
        sys.exit(f"{name}: {len(weight_files(exported))} weight files and an index that does not say so")

    gen = torch.Generator().manual_seed(SEED)
    inputs = torch.randint(0, spec["model"]["vocab_size"], (B, T), generator=gen)
    with torch.no_grad():
        logits = load(exported)(inputs).logits
        other = load(final)(inputs).logits
    if not torch.equal(logits, other):
        sys.exit(f"{name}: the two directories compute different logits")
    moved = min(float((t.double() - t.double().mean()).abs().max()) for t in saved.values() if t.ndim == 1)
    print(f"{name}: {type(load(exported)).__name__} from {len(weight_files(exported))} file(s) "
          f"({spec['dtype']}), {len(saved)} tensors, logits |max| {float(logits.abs().max()):.4f}, "
          f"smallest spread of a 1-D tensor {moved:.3g}")

    dest = os.path.join(out_dir, name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(exported, dest)
    write_safetensors(os.path.join(dest, "transformers_logits.safetensors"),
                      {"inputs": inputs.to(torch.int32), "logits": logits.to(torch.float32)},
                      {"model": json.dumps(spec["model"]), "dtype": spec["dtype"],
                       "max_shard_size": spec["max_shard_size"], "transformers": transformers.__version__,
                       "torch": torch.__version__})


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zerotrain", required=True, help="the zerotrain binary (e.g. build/zerotrain)")
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "fixtures", "hf_export"))
    args = ap.parse_args()
    torch.manual_seed(SEED)
    zerotrain = os.path.abspath(args.zerotrain)
    with tempfile.TemporaryDirectory() as work:
        for name, spec in MODELS.items():
            check(name, spec, zerotrain, work, args.out_dir)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}: every directory loads and agrees")


if __name__ == "__main__":
    main()
