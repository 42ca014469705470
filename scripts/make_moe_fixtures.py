#!/usr/bin/env python3
"""Mixture-of-experts model directories written by transformers' save_pretrained, and the losses of
transformers' own classes training them, for zerotrain's tests (tests/train/test_moe_training.cpp).

For each small random model below, writes tests/fixtures/hf/<name>/ (config.json and the
safetensors shards, the experts under their per-expert names) and tests/fixtures/hf/<name>.reference.json:
  B, T          the micro-batch (2 x 8 unless the model says otherwise)
  tokens        2·steps·B·T + 1 token ids: windows of zerotrain's sampler (data.shuffle false),
                window k = tokens[k·B·T : (k+1)·B·T + 1], inputs its first B·T tokens, targets
                the same shifted by one
  adamw         the optimizer (lr, beta1, beta2, eps, weight_decay, clip) and `losses`: the loss of
                each of `steps` steps (and `grad_norms`, the gradient's norm before clipping) of
                torch.optim.AdamW from the directory's weights (float64,
                experts_implementation "eager"), step k on windows 2k and 2k + 1, each window a
                forward of its own: its mean cross-entropy plus, with output_router_logits,
                router_aux_loss_coef times its load-balancing loss; the step's loss (and what
                backward differentiates) the mean of the two
  aux_losses    with output_router_logits: each step's load-balancing loss, the mean of the two
                windows' (before the coefficient)
  trained_loss  step 0's loss (windows 0 and 1) of the model those steps trained
With --trainer-eval NAME ..., adds to NAME's reference (the directory as it is, not rewritten):
  trainer_eval  transformers' Trainer.evaluate() of the directory's weights over every window of
                `tokens` (per_device_eval_batch_size B, float64): `loss` its eval_loss (each
                window's mean cross-entropy plus, with output_router_logits, router_aux_loss_coef
                times its load-balancing loss, averaged over the windows), `aux_loss` the windows'
                mean load-balancing loss, `windows` their count
The tests read both without torch or transformers. With --check NAME=DIR ..., writes nothing:
loads each DIR (what zerotrain's save_final wrote after training NAME's steps) with transformers'
from_pretrained and prints its trained_loss against the reference's.

Dev-only: needs torch 2.x and transformers 5. Run it with the python3 of a virtual environment
that has them: python3 scripts/make_moe_fixtures.py [--out-dir tests/fixtures/hf] [NAME ...]
"""
import argparse
import json
import math
import os
import shutil

import torch
import torch.nn.functional as F
import transformers

from make_hf_dir_fixtures import OPT, adamw

B, T = 2, 8  # unless a model says otherwise
SEED = 20261129

COMMON = dict(vocab_size=200, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
              max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False)

MODELS = {
    # Qwen3-MoE: 2 layers, both sparse, 4 experts top-2 renormalised, no load-balancing loss.
    "qwen3_moe_fp32": dict(
        model_type="qwen3_moe", steps=3, shard="40KB",
        config=dict(COMMON, num_hidden_layers=2, intermediate_size=48, num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=24, norm_topk_prob=True, output_router_logits=False)),
    # Qwen3-MoE with the load-balancing loss (a coefficient large enough to matter), 3 layers of
    # which layer 1 is dense (mlp_only_layers), top-2 of 4 not renormalised, a tied head.
    "qwen3_moe_aux_fp32": dict(
        model_type="qwen3_moe", steps=3, shard="40KB",
        config=dict(COMMON, num_hidden_layers=3, intermediate_size=40, num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=16, norm_topk_prob=False, output_router_logits=True,
                    router_aux_loss_coef=0.1, mlp_only_layers=[1], tie_word_embeddings=True)),
    # Micro-batches of 4 tokens over 8 experts, top-1: every micro-batch leaves at least 4 experts
    # without a token (on every rank, whatever the routing).
    "qwen3_moe_idle_fp32": dict(
        model_type="qwen3_moe", steps=3, shard="40KB", B=1, T=4,
        config=dict(COMMON, num_hidden_layers=2, intermediate_size=48, num_experts=8, num_experts_per_tok=1,
                    moe_intermediate_size=16, norm_topk_prob=False, output_router_logits=True,
                    router_aux_loss_coef=0.05)),
    # Qwen2-MoE: q/k/v biases, 4 experts top-2 and a shared expert behind its sigmoid gate, with the
    # load-balancing loss.
    "qwen2_moe_fp32": dict(
        model_type="qwen2_moe", steps=3, shard="40KB",
        config=dict(COMMON, num_hidden_layers=2, intermediate_size=48, num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=16, shared_expert_intermediate_size=24, norm_topk_prob=False,
                    output_router_logits=True, router_aux_loss_coef=0.05)),
    # Mixtral: every layer 4 experts of intermediate_size, top-2 always renormalised, saved as
    # block_sparse_moe.experts.E.{w1,w3,w2}; with the load-balancing loss.
    "mixtral_fp32": dict(
        model_type="mixtral", steps=3, shard="40KB",
        config=dict(COMMON, num_hidden_layers=2, intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                    output_router_logits=True, router_aux_loss_coef=0.05, rms_norm_eps=1e-5)),
    # OLMoE: q/k norms over the whole q and k (as many key/value heads as heads, head_dim
    # hidden_size / num_attention_heads), every layer 4 experts of intermediate_size, top-2 not
    # renormalised (OlmoeConfig's default), with the load-balancing loss. No pad_token_id: its
    # nn.Embedding row would get no gradient in transformers.
    "olmoe_fp32": dict(
        model_type="olmoe", steps=3, shard="40KB",
        config=dict({k: v for k, v in COMMON.items() if k != "head_dim"}, num_key_value_heads=4,
                    num_hidden_layers=2, intermediate_size=24, num_experts=4, num_experts_per_tok=2,
                    output_router_logits=True, router_aux_loss_coef=0.05, rms_norm_eps=1e-5, pad_token_id=None)),
}


def make_model(spec, gen):
    config = transformers.AutoConfig.for_model(spec["model_type"], **spec["config"])
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name or name == "lm_head.weight":
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:  # [out, in], or the fused experts [E, out, in]
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[-1]))
    return model.float().eval()


def window_loss(model, tokens, k, t, b):
    """Window k's loss as transformers' class computes it in one forward: the mean cross-entropy,
    plus router_aux_loss_coef times the load-balancing loss with output_router_logits."""
    w = tokens[k * b * t:(k + 1) * b * t + 1]
    idx, tgt = w[:-1].view(b, t), w[1:].reshape(b, t)
    out = model(input_ids=idx)
    loss = F.cross_entropy(out.logits.reshape(-1, out.logits.size(-1)), tgt.reshape(-1))
    aux = out.aux_loss if model.config.output_router_logits else None
    if aux is not None:
        loss = loss + model.config.router_aux_loss_coef * aux
    return loss, aux


def step_loss(model, tokens, step, t, b):
    first, second = window_loss(model, tokens, 2 * step, t, b), window_loss(model, tokens, 2 * step + 1, t, b)
    aux = None if first[1] is None else (first[1] + second[1]) / 2
    return (first[0] + second[0]) / 2, aux


def adamw_losses(model, tokens, steps, t, b):
    params = dict(model.named_parameters())
    opt = adamw(params)
    losses, auxes, norms = [], [], []
    for step in range(steps):
        opt.zero_grad()
        loss, aux = step_loss(model, tokens, step, t, b)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(list(params.values()), OPT["clip"]).item())
        opt.step()
        losses.append(loss.item())
        if aux is not None:
            auxes.append(aux.item())
    return losses, auxes, norms


def make_dir(name, spec, out_dir, seed):
    gen = torch.Generator().manual_seed(seed)
    model = make_model(spec, gen)
    path = os.path.join(out_dir, name)
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, max_shard_size=spec["shard"])

    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager", experts_implementation="eager", dtype=torch.float64)
    steps, b, t = spec["steps"], spec.get("B", B), spec.get("T", T)
    tokens = torch.randint(0, spec["config"]["vocab_size"], (2 * steps * b * t + 1,), generator=gen)
    losses, auxes, norms = adamw_losses(loaded.train(), tokens, steps, t, b)
    ref = dict(B=b, T=t, tokens=tokens.tolist(), adamw=dict(OPT, steps=steps, losses=losses, grad_norms=norms))
    if auxes:
        ref["aux_losses"] = auxes
    with torch.no_grad():
        ref["trained_loss"] = step_loss(loaded.eval(), tokens, 0, t, b)[0].item()
    ref.update(torch=torch.__version__, transformers=transformers.__version__)
    with open(os.path.join(out_dir, name + ".reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {sorted(os.listdir(path))}, losses {losses}")


def trainer_eval(name, out_dir):
    """transformers' Trainer evaluating the directory over the reference's windows (window k's inputs
    its first B·T tokens, its targets the same shifted by one: `shift_labels`, as the loss reads them)."""
    import tempfile
    path = os.path.join(out_dir, name + ".reference.json")
    with open(path) as f:
        ref = json.load(f)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.join(out_dir, name), attn_implementation="eager", experts_implementation="eager",
        dtype=torch.float64).eval()
    tokens, b, t = torch.tensor(ref["tokens"]), ref["B"], ref["T"]
    windows = (len(tokens) - 1) // (b * t)
    rows = [dict(input_ids=w[:-1].view(b, t)[i], labels=w[:-1].view(b, t)[i], shift_labels=w[1:].view(b, t)[i])
            for w in (tokens[k * b * t:(k + 1) * b * t + 1] for k in range(windows)) for i in range(b)]
    with tempfile.TemporaryDirectory() as tmp:
        args = transformers.TrainingArguments(output_dir=tmp, per_device_eval_batch_size=b, use_cpu=True,
                                              report_to=[], remove_unused_columns=False)
        loss = transformers.Trainer(model=model, args=args, eval_dataset=rows).evaluate()["eval_loss"]
    with torch.no_grad():
        aux = [window_loss(model, tokens, k, t, b)[1] for k in range(windows)]
    ref["trainer_eval"] = dict(windows=windows, loss=loss,
                               aux_loss=None if aux[0] is None else sum(a.item() for a in aux) / windows)
    with open(path, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(name, ref["trainer_eval"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "fixtures", "hf"))
    ap.add_argument("--check", nargs="+", metavar="NAME=DIR", help="directories zerotrain saved, to load back")
    ap.add_argument("names", nargs="*", help="the models to write (all by default)")
    ap.add_argument("--trainer-eval", nargs="+", metavar="NAME", help="add transformers' Trainer's evaluation")
    args = ap.parse_args()
    if args.trainer_eval:
        for name in args.trainer_eval:
            trainer_eval(name, os.path.abspath(args.out_dir))
        return
    if args.check:
        for item in args.check:
            name, path = item.split("=", 1)
            with open(os.path.join(args.out_dir, name + ".reference.json")) as f:
                ref = json.load(f)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                path, attn_implementation="eager", experts_implementation="eager", dtype=torch.float64).eval()
            with torch.no_grad():
                loss = step_loss(model, torch.tensor(ref["tokens"]), 0, ref["T"], ref["B"])[0].item()
            want = ref["trained_loss"]
            print(f"{name} {path}: loss {loss:.10f}, trained_loss {want:.10f}, relative {abs(loss - want) / want:.1e}")
        return
    torch.manual_seed(SEED)
    wanted = set(args.names or MODELS)
    for seed, name in enumerate(MODELS, start=SEED):  # a model's seed does not depend on which are made
        if name in wanted:
            make_dir(name, MODELS[name], os.path.abspath(args.out_dir), seed)


if __name__ == "__main__":
    main()
