#!/usr/bin/env python3
"""Preference records and the ids TRL's DPOTrainer makes of them, for tests/tokenize/test_preference_tokens.cpp.

    /work/venv/bin/python scripts/make_preference_token_fixtures.py [--tokenizers ../shared/tokenizers]

Needs trl (1.16), transformers and datasets. Writes under tests/fixtures/preference/:

  FORM.jsonl      preference records of one form each: TRL's prompt/chosen/rejected as conversations
                  (trl_chat; trl_chat_tools with tools, tool calls and reasoning, for Qwen3 only)
                  and as text (trl_text), the implicit prompt (implicit_chat,
                  implicit_text: chosen and rejected whole, sharing their start), LLaMA-Factory's
                  alpaca and sharegpt pairs (sharegpt_openai: its variant with "messages" and
                  role/content), and ms-swift's messages + rejected_response (or
                  rejected_messages)
  expected.json   {"trl": "1.16.0", "tokenizers": {NAME: {FORM: [{"prompt_ids", "chosen_ids",
                  "rejected_ids", "chosen_mask", "rejected_mask"}, ...]}}}: DPOTrainer's own
                  dataset preparation (prompt extraction, EOS after text, chat template, the
                  prompt's ids cut at the common prefix) for the real Qwen3 and Llama 3 tokenizers,
                  and its collator's completion_mask of each row (the prompt's ids then the
                  completion's)

TRL reads only its own forms: the LLaMA-Factory and ms-swift records are turned into TRL's
conversational prompt/chosen/rejected here as those launchers read them (alpaca: the system, the
history's turns, then the instruction and the input on the next line as the question; sharegpt: the
system, then the conversation, with chosen and rejected the answers; ms-swift: the messages before the
last assistant answer, which is chosen, and rejected_response, or the last of rejected_messages, in
its place).
"""
import argparse
import json
import os
import warnings

warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "preference")


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def system(text):
    return {"role": "system", "content": text}


RECORDS = {
    "trl_chat": [
        {"prompt": [user("What color is the sky?")], "chosen": [assistant("It is blue.")],
         "rejected": [assistant("It is green.")]},
        {"prompt": [system("You answer briefly."), user("2 + 2?"), assistant("4"), user("And 3 + 3?")],
         "chosen": [assistant("6")], "rejected": [assistant("  Seven, I think.\n")]},
        {"prompt": [user("Say hi in French.")], "chosen": [assistant("Bonjour !")],
         "rejected": [assistant("<think>Spanish?</think>Hola.")]},
    ],
    "trl_text": [
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
        {"prompt": "Q: 2 + 2?\nA:", "chosen": " 4", "rejected": "four"},
        {"prompt": "Translate: cat ->", "chosen": " chat", "rejected": " Katze<|im_end|>"},
    ],
    "implicit_chat": [
        {"chosen": [user("What color is the sky?"), assistant("It is blue.")],
         "rejected": [user("What color is the sky?"), assistant("It is green.")]},
        {"chosen": [system("Be kind."), user("Hello"), assistant("Hi! How can I help?")],
         "rejected": [system("Be kind."), user("Hello"), assistant("What?")]},
    ],
    "implicit_text": [
        {"chosen": "The sky is blue.", "rejected": "The sky is green."},
        {"chosen": "Paris is the capital of France.", "rejected": "Paris is a city in Texas."},
        {"chosen": "Il a mangé.", "rejected": "Il a mangè."},
        {"chosen": "The answer is 4", "rejected": "The answer is 42"},
    ],
    "alpaca": [
        {"instruction": "Name a primary color.", "input": "", "chosen": "Red.", "rejected": "Purple."},
        {"instruction": "Translate to German.", "input": "good morning", "chosen": "Guten Morgen",
         "rejected": "Gute Nacht", "system": "You translate.", "history": [["Hello", "Hallo"]]},
    ],
    "sharegpt": [
        {"conversations": [{"from": "human", "value": "Is water wet?"}],
         "chosen": {"from": "gpt", "value": "Yes, in the everyday sense."},
         "rejected": {"from": "gpt", "value": "No."}},
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"},
                           {"from": "human", "value": "Tell me a joke."}],
         "chosen": {"from": "gpt", "value": "Why did the chicken cross the road?"},
         "rejected": {"from": "gpt", "value": "No."}, "system": "You are funny."},
    ],
    "sharegpt_openai": [
        {"messages": [user("Name a planet.")], "chosen": assistant("Mars."), "rejected": assistant("The Moon."),
         "system": "You know astronomy."},
    ],
    "swift": [
        {"messages": [user("Best pet?"), assistant("A cat.")], "rejected_response": "A rock."},
        {"messages": [system("Short answers."), user("1 + 1?"), assistant("2"), user("Capital of Italy?"),
                      assistant("Rome.")], "rejected_response": "Milan."},
        {"messages": [user("Largest ocean?"), assistant("The Pacific.")],
         "rejected_messages": [user("Largest ocean?"), assistant("The Atlantic.")]},
    ],
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

# Forms only some tokenizers' templates render (Llama 3's has no tools): {tokenizer: {form: records}}.
RECORDS_OF = {
    "qwen3": {
        "trl_chat_tools": [
            {"prompt": [user("Weather in Paris?")],
             "chosen": [{"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function",
                                         "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}],
             "rejected": [assistant("It is sunny.")], "tools": json.dumps([WEATHER])},
            {"prompt": [user("Is 7 prime?")],
             "chosen": [{"role": "assistant", "content": "Yes.", "reasoning_content": "7 has no divisors but 1 and 7."}],
             "rejected": [assistant("No.")], "tools": json.dumps([WEATHER])},
        ],
    },
}

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}


def sharegpt_message(m):
    return {"role": SHAREGPT_ROLES[m["from"]], "content": m["value"]} if "from" in m else m


def to_trl(form, record):
    """The record as TRL's conversational prompt/chosen/rejected, as its launcher reads it."""
    if form == "alpaca":
        prompt = [system(record["system"])] if record.get("system") else []
        for question, answer in record.get("history") or []:
            prompt += [user(question), assistant(answer)]
        question = record["instruction"] + ("\n" + record["input"] if record.get("input") else "")
        return {"prompt": prompt + [user(question)], "chosen": [assistant(record["chosen"])],
                "rejected": [assistant(record["rejected"])]}
    if form.startswith("sharegpt"):
        prompt = [system(record["system"])] if record.get("system") else []
        prompt += [sharegpt_message(m) for m in record.get("conversations") or record["messages"]]
        return {"prompt": prompt, "chosen": [sharegpt_message(record["chosen"])],
                "rejected": [sharegpt_message(record["rejected"])]}
    if form == "swift":
        messages = record["messages"]
        rejected = record["rejected_messages"][-1] if "rejected_messages" in record else \
            assistant(record["rejected_response"])
        return {"prompt": messages[:-1], "chosen": [messages[-1]], "rejected": [rejected]}
    return record


def trl_ids(tokenizer, records):
    """DPOTrainer's dataset preparation and collator, without a model."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    trainer = DPOTrainer.__new__(DPOTrainer)
    trainer._tokenizer = tokenizer
    args = DPOConfig(output_dir=os.path.join("/tmp", "preference_fixtures"), report_to=[], use_cpu=True, bf16=False,
                     max_length=None)
    prepared = trainer._prepare_dataset(Dataset.from_list(records), tokenizer, args, "train")
    collator = DataCollatorForPreference(pad_token_id=0)
    out = []
    for row in prepared:
        batch = collator([row])
        masks = [[int(m) for m, a in zip(batch["completion_mask"][i], batch["attention_mask"][i]) if a] for i in (0, 1)]
        ids = [[int(t) for t, a in zip(batch["input_ids"][i], batch["attention_mask"][i]) if a] for i in (0, 1)]
        assert ids[0] == row["prompt_ids"] + row["chosen_ids"] and ids[1] == row["prompt_ids"] + row["rejected_ids"]
        out.append({"prompt_ids": row["prompt_ids"], "chosen_ids": row["chosen_ids"],
                    "rejected_ids": row["rejected_ids"], "chosen_mask": masks[0], "rejected_mask": masks[1]})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizers", default=os.path.join(HERE, "..", "..", "shared", "tokenizers"))
    a = parser.parse_args()
    import trl
    from transformers import AutoTokenizer

    os.makedirs(OUT, exist_ok=True)
    every = dict(RECORDS)
    for forms in RECORDS_OF.values():
        every.update(forms)
    for form, records in every.items():
        with open(os.path.join(OUT, form + ".jsonl"), "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    expected = {"trl": trl.__version__, "tokenizers": {}}
    for name in ("qwen3", "llama3"):
        tokenizer = AutoTokenizer.from_pretrained(os.path.join(a.tokenizers, name))
        forms = {**RECORDS, **RECORDS_OF.get(name, {})}
        expected["tokenizers"][name] = {
            form: trl_ids(tokenizer, [to_trl(form, r) for r in records]) for form, records in forms.items()}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(every)} files, {sum(map(len, every.values()))} records, qwen3 and llama3")


if __name__ == "__main__":
    main()
