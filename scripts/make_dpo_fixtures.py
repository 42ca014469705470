#!/usr/bin/env python3
"""Preference-training fixtures: TRL trains the model zerotrain trains on the same pairs.

For each case below, writes tests/fixtures/dpo/<case>/:
  pairs.bin, pairs.mask, pairs.idx   the pairs in the on-disk form of preference data (docs/data.md,
                                     "Preference pairs"): sample 2i = prompt_i + chosen_i, 2i + 1 =
                                     prompt_i + rejected_i, mask 1 on the completion tokens, index
                                     magic 20240525; the ids are the prompt_ids / chosen_ids /
                                     rejected_ids TRL's DPOTrainer trains on
  reference.json                     the run (model directory, max_length, batch, steps, optimizer,
                                     the preference keys) and, per step, TRL's loss, gradient norm
                                     (before clipping) and its metrics rewards/chosen,
                                     rewards/rejected, rewards/accuracies, rewards/margins,
                                     logps/chosen, logps/rejected; with `eval`, TRL's evaluation of
                                     the same pairs after the last step (loss, rewards/accuracies,
                                     rewards/margins); ref_logps: the reference log-probabilities
                                     TRL precomputed for each kept pair (null without a reference)
A case with `ref_model` adds
  ref_model/                         a second model directory, the base model trained a few steps of
                                     next-token loss on the chosen sequences: TRL's DPOTrainer gets it
                                     as ref_model, so the reference log-probabilities are its own and
                                     not the policy's starting weights' (zerotrain: preference.reference
                                     set to that directory)
The model is tests/fixtures/lora's base directory (a small Qwen3 or Llama 3, fp32), or with `model_dir`
that directory of tests/fixtures (a small Qwen3-MoE); a LoRA case adds
  init_adapter/                      PEFT's adapter before training, which TRL + PEFT then train (the
                                     reference: TRL's forward with the adapters disabled); with
                                     `trained`, its B drawn (std `trained`), so that the adapters-off
                                     forward is not the adapted model's
TRL trains on the CPU in fp32, data in order (no shuffle), one process, each step one batch of
`pairs_per_step` pairs; the last pair's prompt fills max_length, so TRL drops it. DPO and its
family: DPOTrainer with precompute_ref_log_probs; rpo_alpha: loss_type [loss_type, "sft"] with
loss_weights [1, rpo_alpha]; simpo: CPOTrainer (loss_type simpo, cpo_alpha 0), orpo: ORPOTrainer, each
on the pairs DPOTrainer keeps, truncated as it truncates them (an orpo step also records TRL's
nll_loss, log_odds_ratio and log_odds_chosen). With `micro_pairs`, each step is micro-batches of that
many pairs (gradient accumulation): a step's loss and metrics are the mean of its micro-batches'.
A model with experts: DPOTrainer adds router_aux_loss_coef times the load-balancing loss whenever
the coefficient is not 0, output_router_logits or not, and records it as aux_loss; ORPOTrainer and
CPOTrainer add it only with output_router_logits.
tests/train/test_preference.cpp reads it; CI never runs Python.

Dev-only: needs torch 2.x, transformers, peft and trl (PyPI's trl 1.16).
Usage: python3 scripts/make_dpo_fixtures.py [--out-dir tests/fixtures/dpo]
"""
import argparse
import json
import os
import struct
import tempfile

import numpy as np
import peft
import torch
import transformers
import trl
import trl.experimental.cpo
import trl.experimental.orpo
from datasets import Dataset
from tokenizers import Tokenizer, models
from torch.utils.data import SequentialSampler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAIRS, PAIRS_PER_STEP, STEPS, MAX_LENGTH = 32, 4, 8, 24
OPT = dict(lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, clip=1.0)
SEED = 20261129

CASES = {
    # With an evaluation after the last step, of the same pairs as validation data.
    "qwen3_sigmoid": dict(model="qwen3", loss_type="sigmoid", beta=0.1, label_smoothing=0.0, eval=True),
    "qwen3_robust": dict(model="qwen3", loss_type="robust", beta=0.2, label_smoothing=0.1),
    "qwen3_ipo": dict(model="qwen3", loss_type="ipo", beta=0.5, label_smoothing=0.0),
    "llama3_sigmoid": dict(model="llama3", loss_type="sigmoid", beta=0.3, label_smoothing=0.0),
    # LoRA: PEFT's adapters (B zero, so the reference, TRL's adapters-off forward, is the base model).
    "qwen3_lora": dict(model="qwen3", loss_type="sigmoid", beta=0.1, label_smoothing=0.0,
                       lora=dict(r=4, alpha=8, target_modules=["q_proj", "v_proj", "up_proj", "down_proj"])),
    # LoRA from an adapter that has trained (B not zero): TRL's reference is the forward with the
    # adapters disabled (PEFT without a ref_model), zerotrain's reference "adapters_off".
    "qwen3_lora_adapters_off": dict(model="qwen3", loss_type="sigmoid", beta=0.2, reference="adapters_off",
                                    lora=dict(r=4, alpha=8, target_modules=["q_proj", "k_proj", "gate_proj"],
                                              trained=0.05)),
    # Llama 3 with new adapters and the reference of the adapters off (the base model: TRL's either way).
    "llama3_lora": dict(model="llama3", loss_type="ipo", beta=0.5, reference="adapters_off",
                        lora=dict(r=8, alpha=16, target_modules=["q_proj", "o_proj", "down_proj"])),
    # RPO: DPO plus rpo_alpha times the chosen completions' mean NLL (TRL 1.16: loss_type ["sigmoid", "sft"]
    # with loss_weights [1, rpo_alpha]).
    "qwen3_rpo": dict(model="qwen3", loss_type="sigmoid", beta=0.1, rpo_alpha=0.5),
    "llama3_rpo": dict(model="llama3", loss_type="ipo", beta=0.5, rpo_alpha=0.3),
    # SimPO, reference-free: TRL's CPOTrainer with loss_type "simpo" and cpo_alpha 0.
    "qwen3_simpo": dict(model="qwen3", loss_type="simpo", beta=2.0, simpo_gamma=0.5),
    # A reference model other than the policy's start (TRL's ref_model), full fine-tuning and LoRA.
    "qwen3_ref_model": dict(model="qwen3", loss_type="sigmoid", beta=0.2, ref_model=True),
    "qwen3_lora_ref_model": dict(model="qwen3", loss_type="sigmoid", beta=0.1, ref_model=True,
                                 lora=dict(r=4, alpha=8, target_modules=["q_proj", "v_proj", "down_proj"])),
    "llama3_simpo": dict(model="llama3", loss_type="simpo", beta=2.5, simpo_gamma=1.0),
    # ORPO, reference-free: TRL's ORPOTrainer (the chosen sequence's NLL, prompt included, plus beta
    # times the odds-ratio term); full fine-tuning and LoRA.
    "qwen3_orpo": dict(model="qwen3", loss_type="orpo", beta=0.1),
    "llama3_orpo": dict(model="llama3", loss_type="orpo", beta=0.5),
    "qwen3_lora_orpo": dict(model="qwen3", loss_type="orpo", beta=0.25,
                            lora=dict(r=4, alpha=8, target_modules=["q_proj", "v_proj", "gate_proj", "down_proj"])),
    # Qwen3-MoE, DPO in two micro-batches of 2 pairs a step (the aux loss is each forward's own): with
    # output_router_logits (coefficient 0.1), and without it (DPOTrainer adds the aux loss all the same,
    # coefficient 0.001); ORPO with it, one micro-batch of 4 pairs (its NLL is each micro-batch's mean in
    # TRL, the step's in zerotrain).
    "qwen3_moe_sigmoid": dict(model="qwen3_moe", model_dir="hf/qwen3_moe_aux_fp32", loss_type="sigmoid", beta=0.1,
                              micro_pairs=2),
    "qwen3_moe_quiet_sigmoid": dict(model="qwen3_moe", model_dir="hf/qwen3_moe_fp32", loss_type="sigmoid",
                                    beta=0.1, micro_pairs=2),
    "qwen3_moe_orpo": dict(model="qwen3_moe", model_dir="hf/qwen3_moe_aux_fp32", loss_type="orpo", beta=0.1,
                           micro_pairs=4),
}
REFERENCE_FREE = ("simpo", "orpo")
RECORDED = ("rewards/", "logps/", "nll_loss", "log_odds_ratio", "log_odds_chosen", "aux_loss")


def write_header(f, magic, version, count):
    header = [0] * 256
    header[0], header[1], header[2] = magic, version, count
    f.write(struct.pack("<256i", *header))


def write_pairs(out, pairs):
    """The on-disk pairs: tokens (uint16), mask, index (pairs magic)."""
    tokens, mask, offsets = [], [], [0]
    for prompt, chosen, rejected in pairs:
        for completion in (chosen, rejected):
            tokens += prompt + completion
            mask += [0] * len(prompt) + [1] * len(completion)
            offsets.append(len(tokens))
    with open(os.path.join(out, "pairs.bin"), "wb") as f:
        write_header(f, 20240520, 1, len(tokens))
        f.write(np.asarray(tokens, dtype="<u2").tobytes())
    with open(os.path.join(out, "pairs.mask"), "wb") as f:
        write_header(f, 20240523, 1, len(tokens))
        f.write(np.asarray(mask, dtype=np.uint8).tobytes())
    with open(os.path.join(out, "pairs.idx"), "wb") as f:
        header = [0] * 256
        header[0], header[1], header[2], header[3] = 20240525, 1, len(offsets) - 1, len(tokens)
        f.write(struct.pack("<256i", *header))
        f.write(np.asarray(offsets, dtype="<u8").tobytes())


def make_pairs(vocab, gen):
    def ids(lo, hi):
        return torch.randint(2, vocab, (int(torch.randint(lo, hi + 1, (1,), generator=gen)),), generator=gen).tolist()

    pairs = []
    for i in range(PAIRS):
        # Pair 5's chosen answer runs past max_length: kept, truncated keeping its start.
        pairs.append((ids(3, 10), ids(2, 8) if i != 5 else ids(20, 22), ids(2, 8)))
    pairs.append((ids(MAX_LENGTH, MAX_LENGTH + 2), ids(2, 4), ids(2, 4)))  # the prompt fills max_length: dropped
    return pairs


def word_tokenizer(vocab):
    """A tokenizer of `vocab` words, only for TRL's padding id (the data arrives as ids)."""
    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")


class Recorder(trl.DPOTrainer):
    """TRL's DPOTrainer with the data already tokenized, read in order, and each step's loss and
    metrics kept as computed (not rounded for the log)."""

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        # TRL's own rule for a prompt that fills max_length, on ids given as TRL would make them.
        return dataset.filter(lambda example: len(example["prompt_ids"]) < args.max_length)

    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)

    def _compute_loss(self, model, inputs, return_outputs):
        out = super()._compute_loss(model, inputs, return_outputs)
        loss = out[0] if return_outputs else out
        metrics = {k: v[-1] for k, v in self._metrics["train"].items() if k.startswith(RECORDED) and v}
        self.records.append(dict(loss=loss.item(), **metrics))
        return out


class AdaptersOffRecorder(Recorder):
    """TRL's reference of a PEFT model without a "ref" adapter: the forward with the adapters disabled.
    TRL 1.16 copies a pretrained adapter into a frozen "ref" adapter when it can (PEFT >= 0.20) and
    takes this path otherwise; the copy is removed here so that the precompute takes it."""

    def _precompute_ref_logps(self, dataset, name, batch_size):
        if "ref" in self.model.peft_config:
            self.model.delete_adapter("ref")
        return super()._precompute_ref_logps(dataset, name, batch_size)


class PairsRecorder:
    """A TRL trainer of its own tokenization (CPOTrainer, ORPOTrainer) on the ids TRL's DPOTrainer trains
    on (its tokenizer rule bypassed: the pairs arrive truncated as DPOTrainer truncates them, the pair
    whose prompt fills max_length left out), read in order, each step's loss and metrics kept as
    computed."""

    def tokenize_row(self, feature, model=None):
        row = {"prompt_input_ids": feature["prompt_ids"], "prompt_attention_mask": [1] * len(feature["prompt_ids"])}
        for key in ("chosen", "rejected"):
            ids = feature["prompt_ids"] + feature[f"{key}_ids"]
            row[f"{key}_input_ids"] = ids
            row[f"{key}_attention_mask"] = [1] * len(ids)
            row[f"{key}_labels"] = [-100] * len(feature["prompt_ids"]) + feature[f"{key}_ids"]
        return row

    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)

    def get_batch_loss_metrics(self, model, batch, train_eval="train"):
        loss, metrics = super().get_batch_loss_metrics(model, batch, train_eval)
        if train_eval == "train":
            self.records.append(dict(loss=loss.item(), **{k: float(v) for k, v in metrics.items()
                                                         if k.startswith(RECORDED)}))
        return loss, metrics


class CpoRecorder(PairsRecorder, trl.experimental.cpo.CPOTrainer):
    pass


class OrpoRecorder(PairsRecorder, trl.experimental.orpo.ORPOTrainer):
    pass


def preference_keys(case):
    """The preference block of a case, in zerotrain's (TRL's) names."""
    keys = dict(loss_type=case["loss_type"], beta=case["beta"])
    for key in ("label_smoothing", "rpo_alpha", "simpo_gamma", "reference"):
        if case.get(key):
            keys[key] = case[key]
    return keys


def batching(case):
    """TRL's batch and accumulation: a step of PAIRS_PER_STEP pairs, in micro-batches of micro_pairs."""
    micro = case.get("micro_pairs", PAIRS_PER_STEP)
    return dict(per_device_train_batch_size=micro, gradient_accumulation_steps=PAIRS_PER_STEP // micro)


def step_means(records, per_step):
    """Each step's mean of its micro-batches' records."""
    steps = [records[i:i + per_step] for i in range(0, len(records), per_step)]
    return [{k: sum(r[k] for r in step) / len(step) for k in step[0]} for step in steps]


def model_dir_of(case):
    if "model_dir" in case:
        return os.path.join(ROOT, "tests", "fixtures", case["model_dir"])
    return os.path.join(ROOT, "tests", "fixtures", "lora", case["model"], "base")


def train_reference_free(case, model, pairs, vocab, tmp):
    """SimPO (CPOTrainer) or ORPO (ORPOTrainer) on the pairs DPOTrainer keeps, truncated as it truncates them."""
    kept = [(p, (p + c)[:MAX_LENGTH][len(p):], (p + r)[:MAX_LENGTH][len(p):]) for p, c, r in pairs
            if len(p) < MAX_LENGTH]
    data = Dataset.from_dict({"prompt_ids": [p for p, _, _ in kept], "chosen_ids": [c for _, c, _ in kept],
                              "rejected_ids": [r for _, _, r in kept]})
    common = dict(
        output_dir=tmp, **batching(case), max_steps=STEPS, learning_rate=OPT["lr"],
        adam_beta1=OPT["beta1"], adam_beta2=OPT["beta2"], adam_epsilon=OPT["eps"],
        weight_decay=OPT["weight_decay"], max_grad_norm=OPT["clip"], lr_scheduler_type="constant", logging_steps=1,
        save_strategy="no", report_to=[], bf16=False, fp16=False, use_cpu=True, gradient_checkpointing=False,
        max_length=MAX_LENGTH, max_completion_length=MAX_LENGTH, beta=case["beta"], seed=SEED,
        dataloader_drop_last=False, remove_unused_columns=False)
    if case["loss_type"] == "simpo":
        args = trl.experimental.cpo.CPOConfig(**common, loss_type="simpo", cpo_alpha=0.0,
                                              simpo_gamma=case["simpo_gamma"])
        recorder = CpoRecorder
    else:
        args = trl.experimental.orpo.ORPOConfig(**common)
        recorder = OrpoRecorder
    trainer = recorder(model=model, args=args, train_dataset=data, processing_class=word_tokenizer(vocab))
    trainer.records = []
    trainer.train()
    return trainer, len(kept)


def make_ref_model(model_dir, pairs, out):
    """The base model after a few AdamW steps of next-token loss on the chosen sequences, saved as a
    model directory: a reference that differs from the policy's starting weights."""
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(3):
        for prompt, chosen, _ in pairs[step * 8:(step + 1) * 8]:
            ids = torch.tensor([(prompt + chosen)[:MAX_LENGTH]])
            model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    path = os.path.join(out, "ref_model")
    model.save_pretrained(path)
    return transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)


def train_dpo(case, model, data, vocab, tmp, ref_model=None):
    """DPOTrainer with the reference precomputed; rpo_alpha as TRL 1.16 spells it, an "sft" loss
    weighted rpo_alpha beside the preference loss."""
    losses = [case["loss_type"]] + (["sft"] if case.get("rpo_alpha") else [])
    weights = [1.0, case["rpo_alpha"]] if case.get("rpo_alpha") else None
    args = trl.DPOConfig(output_dir=tmp, **batching(case), max_steps=STEPS,
                         learning_rate=OPT["lr"], adam_beta1=OPT["beta1"], adam_beta2=OPT["beta2"],
                         adam_epsilon=OPT["eps"], weight_decay=OPT["weight_decay"], max_grad_norm=OPT["clip"],
                         lr_scheduler_type="constant", logging_steps=1, save_strategy="no", report_to=[],
                         bf16=False, fp16=False, use_cpu=True, gradient_checkpointing=False,
                         max_length=MAX_LENGTH, precompute_ref_log_probs=True, loss_type=losses,
                         loss_weights=weights, beta=case["beta"], label_smoothing=case.get("label_smoothing", 0.0),
                         seed=SEED, dataloader_drop_last=False)
    recorder = AdaptersOffRecorder if case.get("reference") == "adapters_off" else Recorder
    trainer = recorder(model=model, ref_model=ref_model, args=args, train_dataset=data,
                       processing_class=word_tokenizer(vocab), eval_dataset=data if case.get("eval") else None)
    trainer.records = []
    ref = trainer.train_dataset
    ref_logps = [[float(c), float(r)] for c, r in zip(ref["ref_chosen_logps"], ref["ref_rejected_logps"])]
    trainer.train()
    evaluation = None
    if case.get("eval"):
        ev = trainer.evaluate()
        evaluation = {k[len("eval_"):]: float(v) for k, v in ev.items()
                      if k in ("eval_loss", "eval_rewards/accuracies", "eval_rewards/margins")}
    return trainer, ref_logps, evaluation


def run_case(name, case, out_dir):
    torch.manual_seed(SEED)
    model_dir = model_dir_of(case)
    vocab = json.load(open(os.path.join(model_dir, "config.json")))["vocab_size"]
    gen = torch.Generator().manual_seed(SEED)
    pairs = make_pairs(vocab, gen)
    out = os.path.join(out_dir, name)
    os.makedirs(out, exist_ok=True)
    write_pairs(out, pairs)
    data = Dataset.from_dict({"prompt_ids": [p for p, _, _ in pairs], "chosen_ids": [c for _, c, _ in pairs],
                              "rejected_ids": [r for _, _, r in pairs]})
    ref_model = make_ref_model(model_dir, pairs, out) if case.get("ref_model") else None
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if "lora" in case:
        l = case["lora"]
        model = peft.get_peft_model(model, peft.LoraConfig(r=l["r"], lora_alpha=l["alpha"], lora_dropout=0.0,
                                                           target_modules=l["target_modules"], bias="none",
                                                           task_type="CAUSAL_LM"))
        if l.get("trained"):  # an adapter as training left it: B drawn, so adapters off is not the model
            with torch.no_grad():
                for key, param in model.named_parameters():
                    if "lora_B" in key:
                        param.normal_(0.0, l["trained"])
        model.save_pretrained(os.path.join(out, "init_adapter"))
        os.remove(os.path.join(out, "init_adapter", "README.md"))  # PEFT's model card template
    evaluation, ref_logps = None, None
    with tempfile.TemporaryDirectory() as tmp:
        if case["loss_type"] in REFERENCE_FREE:
            trainer, kept = train_reference_free(case, model, pairs, vocab, tmp)
        else:
            trainer, ref_logps, evaluation = train_dpo(case, model, data, vocab, tmp, ref_model)
            kept = len(ref_logps)
        records = step_means(trainer.records, batching(case)["gradient_accumulation_steps"])
    assert len(records) == STEPS, len(records)
    norms = [h["grad_norm"] for h in trainer.state.log_history if "grad_norm" in h]
    assert len(norms) == STEPS, norms
    for record, norm in zip(records, norms):
        record["grad_norm"] = float(norm)
    reference = dict(model=case["model"], model_dir=case.get("model_dir"), micro_pairs=case.get("micro_pairs"),
                     max_length=MAX_LENGTH, pairs_per_step=PAIRS_PER_STEP, steps=STEPS,
                     pairs=len(pairs), kept_pairs=kept, **OPT, preference=preference_keys(case),
                     lora={k: v for k, v in case["lora"].items() if k != "trained"} if "lora" in case else None,
                     evaluation=evaluation, ref_model="ref_model" if ref_model is not None else None,
                     steps_trl=records, ref_logps=ref_logps, versions=dict(
                         trl=trl.__version__, transformers=transformers.__version__, torch=torch.__version__))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    print(name, [round(r["loss"], 6) for r in records], evaluation or "")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", default=os.path.join(ROOT, "tests", "fixtures", "dpo"))
    p.add_argument("--case", action="append", help="only these cases")
    a = p.parse_args()
    for name, case in CASES.items():
        if not a.case or name in a.case:
            run_case(name, case, a.out_dir)


if __name__ == "__main__":
    main()
