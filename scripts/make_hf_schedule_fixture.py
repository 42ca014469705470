#!/usr/bin/env python3
"""Writes tests/optim/hf_schedule_fixture.json: the learning rate of every step under the Hugging
Face Trainer's schedules (transformers.get_scheduler over a torch optimizer, as the Trainer makes
them when a DeepSpeed config has no scheduler), for several warmups, lengths and
lr_scheduler_kwargs, and the defaults of TrainingArguments that zerotrain's "auto" takes.
Run with Debian's python3-torch and transformers 4.44.2 from PyPI:
  /usr/bin/python3 -m venv --system-site-packages VENV && VENV/bin/pip install transformers==4.44.2
  VENV/bin/python scripts/make_hf_schedule_fixture.py"""
import dataclasses
import json
import os

import torch
import transformers
from transformers import TrainingArguments, get_scheduler

CASES = [
    # (type, peak lr, warmup steps, training steps, lr_scheduler_kwargs)
    ("linear", 3e-4, 0, 20, {}),
    ("linear", 3e-4, 5, 20, {}),
    ("cosine", 2e-5, 0, 17, {}),
    ("cosine", 2e-5, 4, 17, {}),
    ("cosine", 1e-3, 3, 30, {"num_cycles": 1.3}),
    ("cosine_with_restarts", 5e-5, 2, 25, {}),
    ("cosine_with_restarts", 5e-5, 2, 25, {"num_cycles": 3}),
    ("polynomial", 1e-3, 3, 20, {}),
    ("polynomial", 1e-3, 0, 20, {"power": 2.0, "lr_end": 1e-5}),
    ("constant", 7e-5, 0, 10, {}),
    ("constant_with_warmup", 7e-5, 6, 10, {}),
    ("inverse_sqrt", 1e-3, 0, 10, {}),
    ("inverse_sqrt", 1e-3, 5, 20, {}),
    ("cosine_with_min_lr", 3e-4, 3, 20, {"min_lr_rate": 0.1}),
    ("cosine_with_min_lr", 3e-4, 0, 20, {"min_lr": 1e-5}),
    ("cosine_with_min_lr", 3e-4, 2, 20, {"min_lr_rate": 0.05, "num_cycles": 0.7}),
]


def learning_rates(name, lr, warmup, total, kwargs, steps):
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    scheduler = get_scheduler(name, optimizer, num_warmup_steps=warmup, num_training_steps=total,
                              scheduler_specific_kwargs=kwargs)
    rates = []
    for _ in range(steps):  # the lr of the step after k updates, k = 0, 1, ...
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def main():
    fields = {f.name: f.default for f in dataclasses.fields(TrainingArguments)}  # the class's own defaults
    defaults = {key: fields[key] for key in (
        "learning_rate", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay", "warmup_steps",
        "warmup_ratio", "max_grad_norm", "logging_steps", "seed")}
    defaults["lr_scheduler_type"] = str(getattr(fields["lr_scheduler_type"], "value", fields["lr_scheduler_type"]))
    cases = [{"type": name, "lr": lr, "warmup_steps": warmup, "total_steps": total, "kwargs": kwargs,
              "lrs": learning_rates(name, lr, warmup, total, kwargs, total + 5)}
             for name, lr, warmup, total, kwargs in CASES]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "optim", "hf_schedule_fixture.json")
    with open(out, "w") as f:
        json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                   "training_arguments_defaults": defaults, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
