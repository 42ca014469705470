#!/usr/bin/env python3
"""Reference fixtures for zerotrain's llama-family models, computed by transformers' own models.

For each small random model below, writes tests/fixtures/hf/<name>.safetensors (the layout of
tests/fixtures/torch: 8-byte little-endian header length, JSON header, raw little-endian tensors),
which tests/model reads without torch or transformers:
  <Hugging Face name>   every parameter as the model holds it (model.embed_tokens.weight [V, C],
                        model.layers.{i}.self_attn.q_proj.weight [out, in], ..., lm_head.weight when
                        untied), float32
  inputs, targets       int32 [B, T]
  logits [B, T, V], loss [1]   the model's logits and the mean cross-entropy of targets
  grad.<name>           d loss / d <name> for every parameter
  rope.inv_freq         the rotary embedding's inverse frequencies (after rope scaling)
  adamw.inputs, adamw.targets  int32 [steps, B, T]: one batch per optimizer step
  adamw.losses, adamw.grad_norms [steps]: loss and global gradient L2 norm (before clipping) of each
                        step of torch.optim.AdamW (decoupled weight decay on 2-D tensors only) with
                        global norm clipping
The architecture, in zerotrain's model keys, and the optimizer settings are in __metadata__.

The models are transformers' LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
Qwen3ForCausalLM (eager attention) run in float64 from float32 weights; transformers computes
RMSNorm, the softmax and the rotary tables in float32 inside, so the references are exact to
about 1e-7. Every parameter is random (a unit norm weight or a zero bias would hide mistakes).

Dev-only: needs torch 2.x and transformers (in a virtual environment); CI does not.
Usage: python3 scripts/make_hf_fixtures.py [--out-dir tests/fixtures/hf]
"""
import argparse
import copy
import json
import math
import os

import torch
import torch.nn.functional as F
import transformers

from make_torch_fixtures import adamw_steps, adamw_tensors, reference_tensors, write_safetensors

B, T = 2, 16
OPT = dict(steps=5, lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, clip=1.0)
SEED = 20250611

# zerotrain's model keys (docs/config.md); each maps one to one onto a config.json key.
MODELS = {
    # Llama 3: grouped-query attention 4/2, llama3 rope scaling (all three frequency bands occur
    # at head_dim 16, theta 500000, original context 64), tied head, no bias.
    "llama3": dict(model_type="llama", n_layer=2, n_head=4, n_kv_head=2, head_dim=16, d_model=64, d_ff=64,
                   vocab_size=300, max_seq_len=128, norm_eps=1e-5, rope_theta=500000.0,
                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                     original_max_position_embeddings=64),
                   attention_bias=False, mlp_bias=False, tie_word_embeddings=True),
    # Qwen2: q, k and v biases (no o bias), multi-query attention (one key/value head), untied head.
    "qwen2": dict(model_type="qwen2", n_layer=2, n_head=4, n_kv_head=1, head_dim=16, d_model=64, d_ff=64,
                  vocab_size=300, max_seq_len=128, norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                  attention_bias=False, mlp_bias=False, tie_word_embeddings=False),
    # Qwen3: per-head q/k RMSNorm, head_dim 24 with 4 heads (96 != d_model 64), GQA 4/2, tied head,
    # attention_bias (q, k, v and o biases).
    "qwen3": dict(model_type="qwen3", n_layer=2, n_head=4, n_kv_head=2, head_dim=24, d_model=64, d_ff=64,
                  vocab_size=300, max_seq_len=128, norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                  attention_bias=True, mlp_bias=False, tie_word_embeddings=True),
    # Llama with attention_bias and mlp_bias (q, k, v, o and gate, up, down biases), untied head.
    "llama_bias": dict(model_type="llama", n_layer=1, n_head=2, n_kv_head=1, head_dim=16, d_model=32, d_ff=48,
                       vocab_size=200, max_seq_len=64, norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                       attention_bias=True, mlp_bias=True, tie_word_embeddings=False),
    # Mistral: llama without biases; a sliding window longer than the sequence changes nothing.
    "mistral": dict(model_type="mistral", n_layer=1, n_head=4, n_kv_head=2, head_dim=8, d_model=32, d_ff=48,
                    vocab_size=200, max_seq_len=64, norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                    attention_bias=False, mlp_bias=False, tie_word_embeddings=False, sliding_window=32),
}


def hf_config(m):
    """The transformers config of a fixture, from zerotrain's keys (config.json's names)."""
    rope = dict(m["rope_scaling"] or {"rope_type": "default"})
    kw = dict(num_hidden_layers=m["n_layer"], num_attention_heads=m["n_head"], num_key_value_heads=m["n_kv_head"],
              head_dim=m["head_dim"], hidden_size=m["d_model"], intermediate_size=m["d_ff"],
              vocab_size=m["vocab_size"], max_position_embeddings=m["max_seq_len"], rms_norm_eps=m["norm_eps"],
              tie_word_embeddings=m["tie_word_embeddings"], hidden_act="silu")
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {**rope, "rope_theta": m["rope_theta"]}
    else:
        kw["rope_theta"] = m["rope_theta"]
        kw["rope_scaling"] = m["rope_scaling"]
    t = m["model_type"]
    if t in ("gemma2", "gemma3_text"):
        return gemma_config(m, kw)
    if t == "llama":
        kw.update(attention_bias=m["attention_bias"], mlp_bias=m["mlp_bias"])
        return transformers.LlamaConfig(**kw)
    if t == "mistral":
        return transformers.MistralConfig(sliding_window=m["sliding_window"], **kw)
    # qwen2, qwen3: a sliding_window switches use_sliding_window on, from layer max_window_layers
    window = m.get("sliding_window")
    qwen = dict(use_sliding_window=window is not None, sliding_window=window,
                max_window_layers=m.get("max_window_layers", m["n_layer"]))
    if t == "qwen2":
        return transformers.Qwen2Config(**qwen, **kw)
    if t == "qwen3":
        return transformers.Qwen3Config(attention_bias=m["attention_bias"], **qwen, **kw)
    raise ValueError(t)


def gemma_config(m, kw):
    """Gemma 2 and Gemma 3 text: GeGLU, the window and soft-capping keys of their config classes;
    Gemma 3's rope_parameters per layer kind (scaling on the full layers only)."""
    kw = dict(kw, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=m["query_pre_attn_scalar"],
              sliding_window=m["sliding_window"], final_logit_softcapping=m["final_logit_softcapping"],
              attn_logit_softcapping=m["attn_logit_softcapping"])
    del kw["hidden_act"]
    if m["model_type"] == "gemma2":
        return transformers.Gemma2Config(**kw)
    kw["rope_parameters"] = {"full_attention": kw["rope_parameters"],
                             "sliding_attention": {"rope_type": "default", "rope_theta": m["rope_local_base_freq"]}}
    return transformers.Gemma3TextConfig(sliding_window_pattern=m["sliding_window_pattern"], **kw)


def make_model(m, gen):
    model = transformers.AutoModelForCausalLM.from_config(hf_config(m), attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # input_layernorm, post_attention_layernorm, norm, q_norm, k_norm
                # Gemma's norms scale by 1 + weight
                unit = 0.0 if m["model_type"].startswith("gemma") else 1.0
                p.copy_(unit + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name or name == "lm_head.weight":
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:  # nn.Linear [out, in]
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
    return model.float().eval()


def random_batch(m, gen):
    shape = (B, T)
    return (torch.randint(0, m["vocab_size"], shape, generator=gen),
            torch.randint(0, m["vocab_size"], shape, generator=gen))


def loss_of(model, idx, targets):
    logits = model(input_ids=idx).logits
    return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def adamw_run(model64, m, gen):
    return adamw_steps(dict(model64.named_parameters()), OPT, lambda: random_batch(m, gen),
                       lambda idx, tgt: loss_of(model64, idx, tgt)[1])


def make_fixture(name, m, out_dir, seed):
    gen = torch.Generator().manual_seed(seed)
    model32 = make_model(m, gen)
    weights = {k: v.detach().clone() for k, v in model32.named_parameters()}  # a tied head appears once
    idx, tgt = random_batch(m, gen)

    model64 = copy.deepcopy(model32).double()  # the same weights (a tied head stays tied)
    logits, loss = loss_of(model64, idx, tgt)
    loss.backward()

    out = reference_tensors(weights, idx, tgt, logits, loss, ((k, p.grad) for k, p in model64.named_parameters()))
    out["rope.inv_freq"] = model32.model.rotary_emb.inv_freq.float()

    adam_model = copy.deepcopy(model32).double()
    a_in, a_tgt, a_loss, a_norm = adamw_run(adam_model, m, gen)
    out.update(adamw_tensors(a_in, a_tgt, a_loss, a_norm))

    meta = {**{k: v for k, v in m.items()}, "B": B, "T": T, **OPT, "seed": seed, "torch": torch.__version__,
            "transformers": transformers.__version__}
    path = os.path.join(out_dir, name + ".safetensors")
    # Metadata values are strings: JSON for everything but model_type and the versions.
    write_safetensors(path, out, {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()})
    print(f"wrote {path} ({os.path.getsize(path)} bytes): {sum(w.numel() for w in weights.values())} parameters, "
          f"loss {loss.item():.6f}, AdamW losses {[round(x, 5) for x in a_loss.tolist()]}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "fixtures", "hf"))
    args = ap.parse_args()
    torch.manual_seed(SEED)
    for i, (name, m) in enumerate(MODELS.items()):
        make_fixture(name, m, os.path.abspath(args.out_dir), SEED + i)


if __name__ == "__main__":
    main()
