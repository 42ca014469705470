#!/usr/bin/python3
"""Reference fixtures for zerotrain's GPT-2, computed by an independent PyTorch implementation.

Writes tests/fixtures/torch/gpt2_tiny.safetensors (safetensors layout: 8-byte little-endian header
length, JSON header, raw little-endian tensors), which tests/model reads without torch:
  weights       Hugging Face GPT-2 names (wte.weight [V, C], ..., ln_f.bias), Conv1D layout (y = x.W + b)
  inputs        int32 [B, T];  targets int32 [B, T]
  logits        [B, T, V];     loss [1] (mean cross-entropy)
  grad.<name>   d loss / d <name> for every weight
  adamw.inputs, adamw.targets  int32 [steps, B, T]: one batch per optimizer step
  adamw.losses, adamw.grad_norms [steps]: loss and global gradient L2 norm (before clipping) of each
                step of AdamW (decoupled weight decay on 2-D tensors only) with global norm clipping
The shape and the optimizer settings are in the header's __metadata__.

The model is computed in float64 from float32 weights, so the fixture holds the exact answer
rounded once to float32. Dev-only: needs python3-torch and python3-numpy (Debian); CI does not.
Usage (Debian python, where python3-torch lives): /usr/bin/python3 scripts/make_torch_fixtures.py [--out tests/fixtures/torch/gpt2_tiny.safetensors]
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

CFG = dict(n_layer=2, n_head=2, d_model=32, vocab_size=60, max_seq_len=16, B=2, T=16)
OPT = dict(steps=10, lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, clip=1.0)
SEED = 20240520


def make_weights(gen):
    """Random GPT-2 weights. Biases and LayerNorm affines are random too, so every parameter path
    is exercised (a zero bias or unit LayerNorm weight would hide mistakes)."""
    C, V, Tm = CFG["d_model"], CFG["vocab_size"], CFG["max_seq_len"]

    def randn(*shape, std):
        return (torch.randn(*shape, generator=gen) * std).float()

    w = {"wte.weight": randn(V, C, std=0.5), "wpe.weight": randn(Tm, C, std=0.2)}
    for i in range(CFG["n_layer"]):
        p = f"h.{i}."
        w[p + "ln_1.weight"] = 1.0 + randn(C, std=0.2)
        w[p + "ln_1.bias"] = randn(C, std=0.1)
        w[p + "attn.c_attn.weight"] = randn(C, 3 * C, std=0.3)
        w[p + "attn.c_attn.bias"] = randn(3 * C, std=0.1)
        w[p + "attn.c_proj.weight"] = randn(C, C, std=0.2)
        w[p + "attn.c_proj.bias"] = randn(C, std=0.1)
        w[p + "ln_2.weight"] = 1.0 + randn(C, std=0.2)
        w[p + "ln_2.bias"] = randn(C, std=0.1)
        w[p + "mlp.c_fc.weight"] = randn(C, 4 * C, std=0.2)
        w[p + "mlp.c_fc.bias"] = randn(4 * C, std=0.1)
        w[p + "mlp.c_proj.weight"] = randn(4 * C, C, std=0.1)
        w[p + "mlp.c_proj.bias"] = randn(C, std=0.1)
    w["ln_f.weight"] = 1.0 + randn(C, std=0.2)
    w["ln_f.bias"] = randn(C, std=0.1)
    return w


def gpt2_forward(w, idx):
    """GPT-2 written out with torch primitives: pre-LN blocks, causal attention, gelu (tanh), tied LM head."""
    B, T = idx.shape
    C, NH = CFG["d_model"], CFG["n_head"]
    hs = C // NH
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(CFG["n_layer"]):
        p = f"h.{i}."
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps=1e-5)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps=1e-5)
        h = F.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], eps=1e-5)
    return x @ w["wte.weight"].T


def loss_of(w, idx, targets):
    logits = gpt2_forward(w, idx)
    return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def random_batch(gen):
    shape = (CFG["B"], CFG["T"])
    return (torch.randint(0, CFG["vocab_size"], shape, generator=gen),
            torch.randint(0, CFG["vocab_size"], shape, generator=gen))


def adamw_steps(params, opt_cfg, next_batch, loss):
    """opt_cfg["steps"] steps of AdamW (decoupled weight decay on 2-D tensors only) with global norm
    clipping on params (name -> tensor), one batch from next_batch() each, loss(idx, tgt) the scalar
    to minimise: the stacked inputs and targets, and each step's loss and gradient norm before clipping."""
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": opt_cfg["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=opt_cfg["lr"], betas=(opt_cfg["beta1"], opt_cfg["beta2"]), eps=opt_cfg["eps"])
    inputs, targets, losses, norms = [], [], [], []
    for _ in range(opt_cfg["steps"]):
        idx, tgt = next_batch()
        opt.zero_grad()
        step_loss = loss(idx, tgt)
        step_loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), opt_cfg["clip"])
        opt.step()
        inputs.append(idx)
        targets.append(tgt)
        losses.append(step_loss.item())
        norms.append(norm.item())
    return torch.stack(inputs), torch.stack(targets), torch.tensor(losses), torch.tensor(norms)


def adamw_run(w32, gen):
    params = {k: v.double().clone().requires_grad_(True) for k, v in w32.items()}
    return adamw_steps(params, OPT, lambda: random_batch(gen), lambda idx, tgt: loss_of(params, idx, tgt)[1])


def reference_tensors(weights, idx, tgt, logits, loss, grads):
    """The tensors of one batch: the weights, the batch, its logits and loss, and grad.<name> for each
    (name, gradient) of grads."""
    out = dict(weights)
    out["inputs"] = idx.int()
    out["targets"] = tgt.int()
    out["logits"] = logits.detach().float()
    out["loss"] = loss.detach().float().reshape(1)
    for k, g in grads:
        out["grad." + k] = g.float()
    return out


def adamw_tensors(inputs, targets, losses, norms):
    """adamw_steps' results under their fixture names."""
    return {"adamw.inputs": inputs.int(), "adamw.targets": targets.int(), "adamw.losses": losses.float(),
            "adamw.grad_norms": norms.float()}


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, offset = [], 0
    for name, t in tensors.items():
        a = t.detach().cpu().numpy()
        dtype = {np.float32: "F32", np.int32: "I32"}[a.dtype.type]
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # keep the tensor data 8-byte aligned
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "torch", "gpt2_tiny.safetensors"))
    args = ap.parse_args()

    gen = torch.Generator().manual_seed(SEED)
    w32 = make_weights(gen)
    idx, tgt = random_batch(gen)

    w64 = {k: v.double().requires_grad_(True) for k, v in w32.items()}
    logits, loss = loss_of(w64, idx, tgt)
    loss.backward()

    out = reference_tensors(w32, idx, tgt, logits, loss, ((k, v.grad) for k, v in w64.items()))
    a_in, a_tgt, a_loss, a_norm = adamw_run(w32, gen)
    out.update(adamw_tensors(a_in, a_tgt, a_loss, a_norm))

    write_safetensors(os.path.abspath(args.out), out, {**CFG, **OPT, "seed": SEED, "torch": torch.__version__})
    print(f"wrote {os.path.abspath(args.out)} ({os.path.getsize(args.out)} bytes): loss {loss.item():.6f}, "
          f"AdamW losses {[round(x, 5) for x in a_loss.tolist()]}, grad norms {[round(x, 4) for x in a_norm.tolist()]}")


if __name__ == "__main__":
    main()
