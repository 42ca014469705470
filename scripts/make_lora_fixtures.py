#!/usr/bin/env python3
"""LoRA fixtures: PEFT + transformers train the adapters zerotrain trains, and load what zerotrain saves.

For each small model below (a Qwen3 and a Llama 3 of tests/fixtures/hf's shapes), writes
tests/fixtures/lora/<name>/:
  base/             the base model as save_pretrained writes it (config.json, model.safetensors, fp32)
  init_adapter/     PEFT's adapter before training (PeftModel.save_pretrained): PEFT's initialisation
                    of A, and B drawn at random so that the adapters act from the first step
  reference.json    B, T, ranks, steps, the optimizer, the lora block; tokens (zerotrain's sampler
                    with data.shuffle false reads window k = tokens[k·B·T : (k+1)·B·T + 1] at step
                    k // ranks, rank k % ranks); losses and grad_norms: each step of PEFT + transformers
                    training the adapters on those windows with torch.optim.AdamW (decoupled weight
                    decay on every adapter, all 2-D), global-norm clipping over the adapters and a
                    constant learning rate, in float64 from the float32 weights; eval_tokens [B, T]
With --zerotrain BINARY it then runs zerotrain's own training of the same adapters (one rank, the
two windows of a step as two micro-batches), its training.save_final and `zerotrain export --merge`
of its checkpoint, and adds:
  trained_adapter/  the PEFT adapter directory zerotrain saved
  merged/           the merged model zerotrain exported (W + scale·B·A under the base names)
  reference.json    zerotrain_losses; peft_logits: PeftModel.from_pretrained(base, trained_adapter)'s
                    logits of eval_tokens; merged_logits: from_pretrained(merged)'s (float64)
after checking that both load with no missing or unexpected tensor and agree with each other.
tests/train/test_lora_peft.cpp reads all of it; CI never runs Python.

Dev-only: needs torch 2.x, transformers and peft (a virtual environment).
Usage: python3 scripts/make_lora_fixtures.py [--zerotrain build/zerotrain] [--out-dir tests/fixtures/lora]
"""
import argparse
import copy
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
import transformers
import peft

from make_hf_fixtures import MODELS as HF_MODELS, make_model

B, T, RANKS, STEPS = 2, 8, 2, 8
OPT = dict(lr=5e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, clip=1.0)
SEED = 20251128

# The base models of tests/fixtures/hf (make_hf_fixtures.py), and the adapters on them.
FIXTURES = {
    # Qwen3: q/k norms, attention biases, head_dim 24 with 4 heads, GQA 4/2, tied head; adapters on
    # slices of both packed projections (q and v of q/k/v, up of gate/up) and on down_proj.
    "qwen3": dict(model=HF_MODELS["qwen3"],
                  lora=dict(r=4, alpha=8, target_modules=["q_proj", "v_proj", "up_proj", "down_proj"],
                            use_rslora=False)),
    # Llama 3: llama3 rope scaling, tied head; every projection ("all-linear"), rsLoRA's scale.
    "llama3": dict(model=HF_MODELS["llama3"],
                   lora=dict(r=8, alpha=16, target_modules="all-linear", use_rslora=True)),
}


def lora_config(l):
    return peft.LoraConfig(r=l["r"], lora_alpha=l["alpha"], lora_dropout=0.0, target_modules=l["target_modules"],
                           use_rslora=l["use_rslora"], bias="none", task_type="CAUSAL_LM")


def window(tokens, k):
    w = tokens[k * B * T:(k + 1) * B * T + 1]
    return w[:-1].view(B, T), w[1:].reshape(B, T)


def step_batch(tokens, step):
    """The windows of every rank at `step` (counting from 0), as one batch."""
    pairs = [window(tokens, step * RANKS + r) for r in range(RANKS)]
    return torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])


def train_reference(model, tokens):
    """PEFT's adapters trained as zerotrain trains them: the step's loss is the mean over its windows."""
    params = [p for p in model.parameters() if p.requires_grad]
    assert all(p.dim() == 2 for p in params)
    opt = torch.optim.AdamW(params, lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"],
                            weight_decay=OPT["weight_decay"])
    losses, norms = [], []
    for s in range(STEPS):
        idx, tgt = step_batch(tokens, s)
        opt.zero_grad()
        logits = model(input_ids=idx).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(params, OPT["clip"]).item())
        opt.step()
        losses.append(loss.item())
    return losses, norms


def write_llmc_tokens(path, tokens):
    """An llm.c token file: 256 int32 of header (magic 20240520, version 1, count), then uint16 tokens."""
    header = [20240520, 1, len(tokens)] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))


def zerotrain_config(l, data):
    """Run in the fixture's directory: the paths it records (adapter_config.json's base model) are relative."""
    return {
        "train_micro_batch_size_per_gpu": B,
        "gradient_accumulation_steps": RANKS,
        "gradient_clipping": OPT["clip"],
        "optimizer": {"type": "AdamW", "params": {"lr": OPT["lr"], "betas": [OPT["beta1"], OPT["beta2"]],
                                                   "eps": OPT["eps"], "weight_decay": OPT["weight_decay"]}},
        "zero_optimization": {"stage": 0},
        "model": {"path": "base"},
        "data": {"train": data, "seq_len": T, "shuffle": False},
        "lora": {"r": l["r"], "alpha": l["alpha"], "target_modules": l["target_modules"],
                 "use_rslora": l["use_rslora"], "init_from": "init_adapter"},
        "training": {"steps": STEPS, "eval_interval": 0, "lr_scheduler_type": "constant", "init_from": "base",
                     "save_final": "trained_adapter"},
    }


def logits64(model, idx):
    with torch.no_grad():
        return model(input_ids=idx).logits


def run_zerotrain(binary, d, spec, ref):
    """zerotrain trains, saves its adapter and exports the merged model; PEFT and transformers load them."""
    l = spec["lora"]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "tokens.bin")
        write_llmc_tokens(data, ref["tokens"])
        cfg = zerotrain_config(l, data)
        cfg["training"]["checkpoint_dir"] = os.path.join(tmp, "ck")
        cfg["training"]["metrics"] = os.path.join(tmp, "metrics.jsonl")
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(cfg, f)
        for path in ("trained_adapter", "merged"):
            shutil.rmtree(os.path.join(d, path), ignore_errors=True)
        subprocess.run([binary, "--config", os.path.join(tmp, "config.json")], check=True, cwd=d)
        subprocess.run([binary, "export", os.path.join(tmp, "ck"), "-o", "merged", "--merge"], check=True, cwd=d)
        with open(cfg["training"]["metrics"]) as f:
            ref["zerotrain_losses"] = [r["loss"] for r in map(json.loads, f) if r["event"] == "step"]
    worst = max(abs(a - b) / abs(b) for a, b in zip(ref["zerotrain_losses"], ref["losses"]))
    print(f"  zerotrain against PEFT: largest relative loss difference {worst:.3g}")
    assert worst < 1e-4, worst

    idx = torch.tensor(ref["eval_tokens"]).view(B, T)
    base = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(d, "base"), attn_implementation="eager",
                                                             dtype=torch.float64)
    adapted = peft.PeftModel.from_pretrained(base, os.path.join(d, "trained_adapter")).eval()
    with torch.no_grad():  # every adapter tensor zerotrain saved was loaded into PEFT's modules
        loaded = {n for n, _ in adapted.named_parameters() if "lora_" in n}
        assert len(loaded) == 2 * len([m for m in adapted.modules() if isinstance(m, peft.tuners.lora.Linear)])
    peft_logits = logits64(adapted, idx)
    merged, info = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.join(d, "merged"), attn_implementation="eager", dtype=torch.float64, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    merged_logits = logits64(merged.eval(), idx)
    diff = (peft_logits - merged_logits).abs().max().item()
    print(f"  PEFT's logits of zerotrain's adapter against transformers' of its merged model: {diff:.3g}")
    assert diff < 1e-4 * peft_logits.abs().max().item(), diff
    ref["peft_logits"] = [float(f"{x:.9g}") for x in peft_logits.flatten().tolist()]
    ref["merged_logits"] = [float(f"{x:.9g}") for x in merged_logits.flatten().tolist()]


def make_fixture(name, spec, out_dir, seed, binary):
    d = os.path.join(out_dir, name)
    m, l = spec["model"], spec["lora"]
    gen = torch.Generator().manual_seed(seed)
    base = make_model(m, gen)
    shutil.rmtree(d, ignore_errors=True)
    base.save_pretrained(os.path.join(d, "base"))
    model = peft.get_peft_model(copy.deepcopy(base), lora_config(l))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    model.save_pretrained(os.path.join(d, "init_adapter"))
    os.remove(os.path.join(d, "init_adapter", "README.md"))  # PEFT's model card template
    tokens = torch.randint(0, m["vocab_size"], (STEPS * RANKS * B * T + 1,), generator=gen)
    eval_tokens = torch.randint(0, m["vocab_size"], (B * T,), generator=gen)
    losses, norms = train_reference(copy.deepcopy(model).double().train(), tokens)
    ref = dict(B=B, T=T, ranks=RANKS, steps=STEPS, **OPT, lora=l, tokens=tokens.tolist(), losses=losses,
               grad_norms=norms, eval_tokens=eval_tokens.tolist(), torch=torch.__version__,
               transformers=transformers.__version__, peft=peft.__version__)
    print(f"{name}: PEFT losses {[round(x, 5) for x in losses]}")
    if binary:
        run_zerotrain(binary, d, spec, ref)
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, indent=0)
        f.write("\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "fixtures", "lora"))
    ap.add_argument("--zerotrain", help="the zerotrain binary: also check what it saves")
    args = ap.parse_args()
    torch.manual_seed(SEED)
    for i, (name, spec) in enumerate(FIXTURES.items()):
        make_fixture(name, spec, os.path.abspath(args.out_dir), SEED + i,
                     os.path.abspath(args.zerotrain) if args.zerotrain else None)


if __name__ == "__main__":
    sys.exit(main())
