#!/usr/bin/env python3
"""Hugging Face model directories written by transformers' save_pretrained, for zerotrain's reader.

For each small random model below, writes tests/fixtures/hf/<name>/ as save_pretrained writes it
(config.json, the safetensors shards model-0000k-of-0000n.safetensors and
model.safetensors.index.json, in the dtype named) and tests/fixtures/hf/<name>.reference.json:
  B, T          the micro-batch
  tokens        2·B·T + 1 token ids: windows 0 and 1 of zerotrain's sampler (data.shuffle false),
                window k = tokens[k·B·T : (k+1)·B·T + 1], inputs its first B·T tokens, targets the
                same shifted by one ([B, T] row-major)
  loss          the mean cross-entropy of both windows' targets, computed by the model
                from_pretrained loads from the directory, in float64 (the directory's own weights,
                so a bf16 directory's reference is that of its bf16 values)
  window_losses the same for window 0 and window 1 alone
With "steps" in a model's entry (the sliding-window models), also:
  adamw         the optimizer (lr, beta1, beta2, eps, weight_decay, clip) and `losses`: the loss of
                each of `steps` steps of torch.optim.AdamW (decoupled weight decay on 2-D tensors
                only, global norm clipping, a constant learning rate) from the directory's weights,
                step k on windows 2k and 2k + 1 (tokens holds 2·steps·B·T + 1 ids)
  trained_loss  `loss` (windows 0 and 1) of the model those steps trained
The tests read both without torch or transformers.

With --bench-dir DIR, writes instead one larger sharded bf16 Llama into DIR (not committed) for
bench/hf_load_memory: --bench-layers and --bench-width set its size.

Dev-only: needs torch 2.x and transformers. Run it with the python3 of a virtual environment that
has them: python3 scripts/make_hf_dir_fixtures.py [--out-dir tests/fixtures/hf] [NAME ...] (NAME:
only those models; all by default)
"""
import argparse
import json
import os
import shutil

import torch
import torch.nn.functional as F
import transformers

from make_hf_fixtures import make_model

B, T = 2, 8
SEED = 20250612
OPT = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, clip=1.0)

# In zerotrain's model keys, as make_hf_fixtures.py writes them (its hf_config and make_model build
# and randomise the transformers model).
MODELS = {
    # Llama 3 in fp32: grouped-query attention 4/2, llama3 rope scaling, tied head; seven shards.
    "llama3_dir_fp32": dict(
        dtype=torch.float32, shard="40KB",
        model=dict(model_type="llama", n_layer=2, n_head=4, n_kv_head=2, head_dim=16, d_model=64, d_ff=64,
                   vocab_size=200, max_seq_len=128, norm_eps=1e-5, rope_theta=500000.0,
                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                     original_max_position_embeddings=64),
                   attention_bias=False, mlp_bias=False, tie_word_embeddings=True)),
    # Qwen2 in bf16: q/k/v biases, multi-query attention, untied head; eight shards.
    "qwen2_dir_bf16": dict(
        dtype=torch.bfloat16, shard="20KB",
        model=dict(model_type="qwen2", n_layer=2, n_head=4, n_kv_head=1, head_dim=16, d_model=64, d_ff=64,
                   vocab_size=200, max_seq_len=128, norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                   attention_bias=False, mlp_bias=False, tie_word_embeddings=False)),
    # Mistral with a window of 8 over sequences of 24 (every layer slides), fp32; three shards.
    "mistral_swa_fp32": dict(
        dtype=torch.float32, shard="40KB", T=24, steps=4,
        model=dict(model_type="mistral", n_layer=2, n_head=4, n_kv_head=2, head_dim=8, d_model=32, d_ff=48,
                   vocab_size=200, max_seq_len=64, norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                   attention_bias=False, mlp_bias=False, tie_word_embeddings=False, sliding_window=8)),
    # Qwen2 with use_sliding_window, a window of 8 over 24, max_window_layers 1: layer 0 full,
    # layers 1 and 2 sliding; q/k/v biases, GQA 4/2, tied head, fp32.
    "qwen2_swa_fp32": dict(
        dtype=torch.float32, shard="40KB", T=24, steps=4,
        model=dict(model_type="qwen2", n_layer=3, n_head=4, n_kv_head=2, head_dim=8, d_model=32, d_ff=48,
                   vocab_size=200, max_seq_len=64, norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                   attention_bias=False, mlp_bias=False, tie_word_embeddings=True, sliding_window=8,
                   max_window_layers=1)),
    # Gemma 2 with a window of 8 over 24: layers 0 and 2 slide, layer 1 is full; four norms a layer,
    # query_pre_attn_scalar 16 (not head_dim), attention and final logits soft-capped tightly enough
    # to bend them, GeGLU, tied head, fp32.
    "gemma2_swa_fp32": dict(
        dtype=torch.float32, shard="40KB", T=24, steps=4,
        model=dict(model_type="gemma2", n_layer=3, n_head=4, n_kv_head=2, head_dim=8, d_model=32, d_ff=48,
                   vocab_size=200, max_seq_len=64, norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                   tie_word_embeddings=True, sliding_window=8, query_pre_attn_scalar=16,
                   attn_logit_softcapping=1.5, final_logit_softcapping=2.0)),
    # Gemma 3 text with a window of 8 over 24, sliding_window_pattern 3: layers 0 and 1 slide (rope
    # theta 10000), layer 2 is full (theta 1e6, linear scaling 2); q_norm and k_norm, no
    # soft-capping, tied head, fp32.
    "gemma3_text_swa_fp32": dict(
        dtype=torch.float32, shard="40KB", T=24, steps=4,
        model=dict(model_type="gemma3_text", n_layer=3, n_head=4, n_kv_head=2, head_dim=8, d_model=32, d_ff=48,
                   vocab_size=200, max_seq_len=64, norm_eps=1e-6, rope_theta=1000000.0,
                   rope_scaling=dict(rope_type="linear", factor=2.0), rope_local_base_freq=10000.0,
                   tie_word_embeddings=True, sliding_window=8, sliding_window_pattern=3, query_pre_attn_scalar=16,
                   attn_logit_softcapping=None, final_logit_softcapping=None)),
}


def window_batch(tokens, k, T):
    w = tokens[k * B * T:(k + 1) * B * T + 1]
    return w[:-1].view(B, T), w[1:].reshape(B, T)


def batch_loss(model, idx, tgt):
    logits = model(input_ids=idx).logits
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))


def window_loss(model, tokens, k, T=T):
    return batch_loss(model, *window_batch(tokens, k, T))


def step_batch(tokens, step, T):
    """Optimizer step `step`'s batch: windows 2·step and 2·step + 1 as one of 2·B rows."""
    a, b = window_batch(tokens, 2 * step, T), window_batch(tokens, 2 * step + 1, T)
    return torch.cat([a[0], b[0]]), torch.cat([a[1], b[1]])


def adamw(params):
    """make_torch_fixtures' optimizer over a model's named parameters: decay on 2-D tensors only."""
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": OPT["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"])


def adamw_losses(model, tokens, steps, T):
    """The loss of each of `steps` AdamW steps (make_torch_fixtures' optimizer, constant lr) on model."""
    params = dict(model.named_parameters())
    opt = adamw(params)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = batch_loss(model, *step_batch(tokens, step, T))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), OPT["clip"])
        opt.step()
        losses.append(loss.item())
    return losses


def make_dir(name, spec, out_dir, seed):
    gen = torch.Generator().manual_seed(seed)
    model = make_model(spec["model"], gen)  # every parameter random
    path = os.path.join(out_dir, name)
    shutil.rmtree(path, ignore_errors=True)
    model.to(spec["dtype"]).save_pretrained(path, max_shard_size=spec["shard"])

    # The reference is the model transformers loads back from the directory, run in float64.
    loaded = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager",
                                                               dtype=torch.float64).eval()
    vocab = spec["model"]["vocab_size"]
    t, steps = spec.get("T", T), spec.get("steps", 1)
    tokens = torch.randint(0, vocab, (2 * steps * B * t + 1,), generator=gen)
    with torch.no_grad():
        losses = [window_loss(loaded, tokens, k, t).item() for k in range(2)]
    ref = dict(B=B, T=t, tokens=tokens.tolist(), loss=sum(losses) / 2, window_losses=losses)
    if "steps" in spec:
        ref["adamw"] = dict(OPT, steps=steps, losses=adamw_losses(loaded.train(), tokens, steps, t))
        with torch.no_grad():
            ref["trained_loss"] = batch_loss(loaded.eval(), *step_batch(tokens, 0, t)).item()
    ref.update(torch=torch.__version__, transformers=transformers.__version__)
    with open(os.path.join(out_dir, name + ".reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    files = sorted(os.listdir(path))
    print(f"wrote {path}: {files}, loss {ref['loss']:.8f}")


def make_bench_dir(path, layers, width):
    """A Llama of `layers` blocks of width `width` (GQA 4:1, vocab 32000, untied), bf16, 5 shards or more."""
    heads = width // 64
    config = transformers.LlamaConfig(
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=max(1, heads // 4), head_dim=64,
        hidden_size=width, intermediate_size=width * 8 // 3 // 64 * 64, vocab_size=32000,
        max_position_embeddings=2048, tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    model = model.to_empty(device="cpu").to(torch.bfloat16)
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    n = sum(p.numel() for p in model.parameters())
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, max_shard_size=f"{max(1, n * 2 // 5 // 1000000)}MB")
    print(f"wrote {path}: {n} parameters in bf16, {sorted(os.listdir(path))}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "fixtures", "hf"))
    ap.add_argument("--bench-dir")
    ap.add_argument("--bench-layers", type=int, default=16)
    ap.add_argument("--bench-width", type=int, default=1024)
    ap.add_argument("names", nargs="*", help="the models to write (all by default)")
    args = ap.parse_args()
    if args.bench_dir:
        make_bench_dir(args.bench_dir, args.bench_layers, args.bench_width)
        return
    torch.manual_seed(SEED)
    for i, (name, spec) in enumerate(MODELS.items()):
        if not args.names or name in args.names:
            make_dir(name, spec, os.path.abspath(args.out_dir), SEED + i)


if __name__ == "__main__":
    main()
