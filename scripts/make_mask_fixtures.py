#!/usr/bin/env python3
"""Reference fixture for training with a loss mask, computed by PyTorch with ignore_index.

Writes tests/fixtures/torch/gpt2_masked.safetensors (the layout of make_torch_fixtures.py), which
tests/model and tests/train read without torch:
  weights        a one-layer GPT-2 under Hugging Face names (make_torch_fixtures.py's model)
  tokens         int32 [N]: a token file of 8 windows of B·T + 1 tokens (windows overlap by one token)
  mask           int32 [N]: 1 where the token counts as a target, 0 where it does not
  window_losses  [4]: F.cross_entropy(ignore_index=-1) of each window of the first step (NaN for the
                 window whose targets are all masked)
  loss [1]       the first step's loss: the sum of the token losses of windows 0-3 over the number of
                 targets that count in them (not a mean of the windows' means)
  grad.<name>    d loss / d <name>
  grad_norm [1]  the global L2 norm of those gradients
  adamw.<name>   the weights after one torch.optim.AdamW step on those gradients with lr 1 and eps 1
                 (the update is then close to the gradient itself: a mis-scaled gradient shows)
The windows of the second step (4-7) have no target that counts. The shapes and the optimizer
settings are in __metadata__.

Window k holds tokens [k·B·T, (k + 1)·B·T + 1): inputs its first B·T tokens, targets the same
shifted by one, as zerotrain's sampler reads them (data.shuffle false): a step of W ranks with
accumulation GA (W·GA = 4) reads windows 0-3, the next step 4-7.

Dev-only: needs torch 2.x and numpy (a virtual environment's python3, or Debian's python3-torch); CI does not.
Usage: python3 scripts/make_mask_fixtures.py [--out tests/fixtures/torch/gpt2_masked.safetensors]
"""
import argparse
import os

import torch
import torch.nn.functional as F

import make_torch_fixtures as gpt2

gpt2.CFG = dict(n_layer=1, n_head=2, d_model=32, vocab_size=60, max_seq_len=16, B=2, T=16)
OPT = dict(lr=1.0, beta1=0.9, beta2=0.999, eps=1.0, weight_decay=0.0)
SEED = 20250523
WINDOWS = 8  # two steps of four windows


def masks(gen, window):
    """Which tokens count: window 0 as chat data (runs of prompt, then answer), window 1 nothing,
    window 2 everything, window 3 at random; windows 4-7 (the second step) nothing."""
    m = torch.zeros(WINDOWS * window + 1, dtype=torch.int32)
    w0 = torch.zeros(window, dtype=torch.int32)
    for start in range(0, window, 11):
        w0[start + 5:start + 11] = 1  # five prompt tokens, then six answer tokens
    m[1:window + 1] = w0  # targets of window 0 are tokens 1..window
    m[2 * window + 1:3 * window + 1] = 1
    m[3 * window + 1:4 * window + 1] = (torch.rand(window, generator=gen) < 0.4).int()
    return m


def window_batch(tokens, mask, k, B, T):
    w = tokens[k * B * T:(k + 1) * B * T + 1].long()
    targets = w[1:].clone()
    targets[mask[k * B * T + 1:(k + 1) * B * T + 1] == 0] = -1
    return w[:-1].view(B, T), targets.view(B, T)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "torch", "gpt2_masked.safetensors"))
    args = ap.parse_args()

    cfg = gpt2.CFG
    B, T, V = cfg["B"], cfg["T"], cfg["vocab_size"]
    gen = torch.Generator().manual_seed(SEED)
    w32 = gpt2.make_weights(gen)
    tokens = torch.randint(0, V, (WINDOWS * B * T + 1,), generator=gen, dtype=torch.int32)
    mask = masks(gen, B * T)

    w64 = {k: v.double().requires_grad_(True) for k, v in w32.items()}
    token_loss_sum, counted, window_losses = 0.0, 0, []
    for k in range(4):
        idx, tgt = window_batch(tokens, mask, k, B, T)
        logits = gpt2.gpt2_forward(w64, idx)
        flat_logits, flat_targets = logits.reshape(-1, V), tgt.reshape(-1)
        window_losses.append(F.cross_entropy(flat_logits, flat_targets, ignore_index=-1).item())
        token_loss_sum = token_loss_sum + F.cross_entropy(flat_logits, flat_targets, ignore_index=-1, reduction="sum")
        counted += int((flat_targets != -1).sum())
    loss = token_loss_sum / counted
    loss.backward()
    grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in w64.values()))

    params = list(w64.values())
    opt = torch.optim.AdamW(params, lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"],
                            weight_decay=OPT["weight_decay"])
    opt.step()

    out = dict(w32)
    out["tokens"] = tokens
    out["mask"] = mask
    out["window_losses"] = torch.tensor(window_losses, dtype=torch.float32)
    out["loss"] = loss.detach().float().reshape(1)
    out["grad_norm"] = grad_norm.detach().float().reshape(1)
    for k, v in w64.items():
        out["grad." + k] = v.grad.float()
        out["adamw." + k] = v.detach().float()

    gpt2.write_safetensors(os.path.abspath(args.out), out,
                           {**cfg, **OPT, "windows": WINDOWS, "counted": counted, "seed": SEED,
                            "torch": torch.__version__})
    print(f"wrote {os.path.abspath(args.out)} ({os.path.getsize(args.out)} bytes): loss {loss.item():.6f} over "
          f"{counted} counted targets, window losses {[round(x, 5) for x in window_losses]}, grad norm "
          f"{grad_norm.item():.5f}")


if __name__ == "__main__":
    main()
