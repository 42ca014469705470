"""The chat part of the tokenizer fixtures (scripts/make_tokenizer_fixtures.py writes them):
conversations as transformers' apply_chat_template renders them with each model's own template.

Formats and where their files come from (DIR: the real tokenizers, ../shared/tokenizers):

  llama3    DIR/llama3: Llama 3's tokenizer and its (base) template
  qwen3     DIR/qwen3: Qwen3's tokenizer and its template (thinking blocks, tools)
  qwen2.5   Qwen2.5-Instruct's template (tests/fixtures/tokenizer/templates/qwen2.5.jinja) over
            Qwen3's tokenizer.json less the four tokens Qwen3 added (<tool_response>,
            </tool_response>, <think>, </think>): the vocabulary and merges are the same
  llama3.1  Llama 3.1-Instruct's template (templates/llama3.1.jinja) over Llama 3's tokenizer.json
            with the added tokens Llama 3.1 renamed (<|finetune_right_pad_id|>, <|eom_id|>,
            <|python_tag|>, the reserved ones renumbered); end of text <|eot_id|> as in its config
  llama2    Llama-2-chat's template (templates/llama2.jinja, meta-llama/Llama-2-7b-chat-hf's
            tokenizer_config.json) over DIR/llama2's 32,000-id SentencePiece tokenizer (whose
            vocabulary is Mistral 7B's: the ids are those of the template's text in it)
  mistral   Mistral-7B-Instruct-v0.2's template (templates/mistral.jinja: mistral-common's "v1"
            template, with a system message) over the same tokenizer in the layout of Mistral's
            newer tokenizer.json files (MISTRAL_PIPELINE: a Metaspace pre-tokenizer that prepends
            "▁" to the first piece only, no normalizer; variants.json's llama2-metaspace-first), on
            which transformers 5 and tokenizers agree: the legacy layout (Prepend normalizer) makes
            tokenizers write "▁" before each " [INST]" after <s> and </s>, which transformers 5,
            rebuilding Llama tokenizers, does not
  gemma     Gemma 3's template (templates/gemma3.jinja, google/gemma-3-1b-it's
            tokenizer_config.json: the system message folded into the first user turn) over
            DIR/llama2's vocabulary in the layout of Gemma's tokenizer.json (GEMMA_PIPELINE: spaces
            replaced by "▁", nothing prepended) with Gemma's special tokens: <bos> and <eos> for <s>
            and </s>, <start_of_turn> and <end_of_turn> added after the vocabulary

The templates are the files llama.cpp keeps in models/templates (as downloaded from the models'
Hugging Face repositories: Qwen-Qwen2.5-7B-Instruct.jinja, meta-llama-Llama-3.1-8B-Instruct.jinja,
meta-llama-Llama-3.2-3B-Instruct.jinja), taken from the llama-cpp-python 0.3.36 source package on
PyPI (vendor/llama.cpp/models/templates); mistral.jinja is the one llama.cpp's
tests/test-chat-template.cpp names "mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template
with a system prompt)" (llama-cpp-python 0.3.16's source package). gemma3.jinja is Gemma 3's
template as its instruction-tuned checkpoints' tokenizer_config.json carries it; gemma2.jinja is
llama.cpp's google-gemma-2-2b-it.jinja (llama-cpp-python 0.3.36), which the tests only tell apart.

chat.json holds
  conversations  {"messages": [...], "tools": [...]} records as users write them (OpenAI / Hugging
                 Face messages: role, content, tool_calls, reasoning_content)
  prompts        conversations rendered with add_generation_prompt=True (what generate --chat feeds)
  formats        per format: the tokenizer directory under trimmed/ (and the template under
                 templates/ where that tokenizer has none), and per conversation the
                 rendered text, its ids, which ids count (the assistants' answers, from after the
                 assistant header through the end-of-turn token), which count when only the last
                 answer does, or null where the format has no tools for the conversation or the
                 template refuses it (raise_exception); per prompt, the text and ids. The ids are
                 apply_chat_template(tokenize=True)'s and tokenizers' on the tokenizer.json (the
                 script checks both), less the generation prompt Llama 3's template writes after a
                 training text. "pipeline" names the variants.json patch of the tokenizer.json.
  prompt_completion  TRL's standard prompt-completion records ({"prompt", "completion"}: text, no
                 template) as SFTTrainer tokenizes them: the tokenizer's ids of prompt + completion
                 + eos_token (added unless the completion ends with it), with its special tokens
                 (Llama 2's <s>), and the ids from len(ids of the prompt alone) on counted; per
                 tokenizer.
"""
import copy
import json
import os
import shutil
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "..", "tests", "fixtures", "tokenizer", "templates")

BASIC = [
    [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "2 + 2 = 4."}],
    [{"role": "system", "content": "You are a terse assistant."},
     {"role": "user", "content": "Name three colours."},
     {"role": "assistant", "content": "Red, green, blue."},
     {"role": "user", "content": "And two more?"},
     {"role": "assistant", "content": "Yellow and purple."}],
    [{"role": "user", "content": "  Spaces around  \n"}, {"role": "assistant", "content": "\n\nLeading newlines and trailing spaces  "}],
    [{"role": "user", "content": "Écris en français, s'il te plaît : « déjà vu »."},
     {"role": "assistant", "content": "Bien sûr ! Voici : déjà vu — 既視感 😀."}],
    [{"role": "user", "content": "Think first."},
     {"role": "assistant", "content": "<think>\nThe user wants thought.\n</think>\n\nDone thinking."},
     {"role": "user", "content": "Again, with code:\n```py\nprint('hi')\n```"},
     {"role": "assistant", "content": "```python\nprint(\"hi\")\n```\n"}],
    [{"role": "system", "content": "Answer in JSON."},
     {"role": "user", "content": "{\"q\": \"x\"}"},
     {"role": "assistant", "content": "{\"a\": [1, 2, 3]}"}],
    [{"role": "user", "content": "Hello."},
     {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "system", "content": "From now on, answer in French."},
     {"role": "user", "content": "What is the capital of Italy?"},
     {"role": "assistant", "content": "La capitale de l'Italie est Rome."}],
]

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city's name, such as \"Paris\"."},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH_TOOL = {"type": "function", "function": {
    "name": "search", "description": "Searches the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["query"]}}}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


TOOLS = [
    {"tools": [WEATHER_TOOL],
     "messages": [
         {"role": "system", "content": "You help with travel."},
         {"role": "user", "content": "What's the weather in Paris?"},
         {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"})]},
         {"role": "tool", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"},
         {"role": "assistant", "content": "It is 21 °C and clear in Paris."}]},
    {"messages": [
        {"role": "user", "content": "Compare Oslo and Rome, then search for flights."},
        {"role": "assistant", "content": "Let me look both up.",
         "tool_calls": [call("get_weather", {"city": "Oslo", "days": [1, 2], "threshold": 0.5, "tiny": 1e-07,
                                             "big": 100, "exact": True, "note": None, "name": "café \"Le Nord\"\nline"}),
                        call("get_weather", {"unit": "fahrenheit", "city": "Rome"})]},
        {"role": "tool", "content": "Oslo: 4 °C, snow."},
        {"role": "tool", "content": "Rome: 61 °F, sun."},
        {"role": "assistant", "content": "Rome is warmer.", "tool_calls": [call("search", {"query": "flights to Rome"})]},
        {"role": "tool", "content": "3 results"},
        {"role": "assistant", "content": "I found three flights."}]},
    {"tools": [WEATHER_TOOL, SEARCH_TOOL],
     "messages": [
         {"role": "user", "content": "Search for \"zerotrain\", 5 results."},
         {"role": "assistant", "content": "", "tool_calls": [call("search", "{\"query\": \"zerotrain\", \"limit\": 5}")]},
         {"role": "tool", "content": "No results for \"zerotrain\".\nTry again?"},
         {"role": "assistant", "content": "Nothing was found."}]},
    {"messages": [
        {"role": "user", "content": "Is it raining in Lyon?"},
        {"role": "assistant", "content": "<think>\nI should check the weather.\n</think>\n\n",
         "tool_calls": [call("get_weather", {"city": "Lyon"})]},
        {"role": "tool", "content": "rain"},
        {"role": "assistant", "content": "Yes, it is raining in Lyon.", "reasoning_content": "The tool said rain."}]},
]

# What the [INST] templates alone have to say: a conversation that does not open with a question.
INST_CASES = [
    [{"role": "system", "content": "  Spaces in the system message. "},
     {"role": "user", "content": "  Spaces around  "}, {"role": "assistant", "content": " An answer with spaces. "},
     {"role": "user", "content": "Next?"}, {"role": "assistant", "content": "Next."}],
    [{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "Fine."},
     {"role": "assistant", "content": "Good."}],
]

PROMPT_COMPLETIONS = [
    {"prompt": "The capital of France is", "completion": " Paris."},
    {"prompt": "Translate to French: cat\n", "completion": "chat"},
    {"prompt": "Q: What is 2 + 2?\nA: ", "completion": "4"},
    {"prompt": "Écris « déjà vu »", "completion": " : déjà vu — 既視感 😀\n"},
    {"prompt": "Say done.", "completion": " Done.<|im_end|>"},  # Qwen's eos_token written: not added again
]

PROMPTS = [
    [{"role": "user", "content": "Say hello."}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello."}],
]

# Where an assistant's answer starts and ends in each format: after the header, through the end of
# the turn token.
CHATML_MARKS = ("<|im_start|>assistant\n", "<|im_end|>")
LLAMA_MARKS = ("<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>")
INST_MARKS = (" [/INST]", "</s>")
GEMMA_MARKS = ("<start_of_turn>model\n", "<end_of_turn>")
FORMATS = {"llama3": LLAMA_MARKS, "qwen3": CHATML_MARKS, "qwen2.5": CHATML_MARKS, "llama3.1": LLAMA_MARKS,
           "llama2": INST_MARKS, "mistral": INST_MARKS, "gemma": GEMMA_MARKS}
# The formats whose tokenizer (DIR/llama2) has no template of its own: the template file given.
TEMPLATE_FILES = {"llama2": "llama2", "mistral": "mistral"}
# Mistral's newer tokenizer.json files: Metaspace, "▁" before the first piece only.
MISTRAL_PIPELINE = {
    "normalizer": None,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}}
PIPELINES = {"mistral": ("llama2-metaspace-first", MISTRAL_PIPELINE)}
# Gemma's tokenizer.json: spaces become "▁" and nothing is prepended; <bos> starts a text.
GEMMA_PIPELINE = {
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                {"SpecialToken": {"id": "<bos>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<bos>": {"id": "<bos>", "ids": [1], "tokens": ["<bos>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                 {"type": "ByteFallback"}, {"type": "Fuse"}]}}
GEMMA_RENAMED = {"<s>": "<bos>", "</s>": "<eos>"}
GEMMA_TURN_TOKENS = ["<start_of_turn>", "<end_of_turn>"]
WITH_TOOLS = {"qwen3", "qwen2.5", "llama3.1"}
# Llama 3's template writes the generation prompt after the conversation even when it is not asked
# for; a training text ends with the last answer.
TRAILING_PROMPT = {"llama3": LLAMA_MARKS[0]}


def read_template(name):
    with open(os.path.join(TEMPLATES, name + ".jinja"), encoding="utf-8") as f:
        return f.read()


def llama31_name(token_id, name):
    renamed = {128004: "<|finetune_right_pad_id|>", 128005: "<|reserved_special_token_2|>", 128008: "<|eom_id|>",
               128010: "<|python_tag|>"}
    if token_id in renamed:
        return renamed[token_id]
    if token_id >= 128011:
        return f"<|reserved_special_token_{token_id - 128008}|>"
    return name


def gemma_tokenizer(directory):
    """Gemma's layout and special tokens on DIR/llama2's vocabulary: tokenizer.json, tokenizer_config.json."""
    tok = json.load(open(os.path.join(directory, "llama2", "tokenizer.json"), encoding="utf-8"))
    tok.update(GEMMA_PIPELINE)
    vocab = tok["model"]["vocab"]
    for old, new in GEMMA_RENAMED.items():
        vocab[new] = vocab.pop(old)
    for a in tok["added_tokens"]:
        a["content"] = GEMMA_RENAMED.get(a["content"], a["content"])
    first = len(vocab)
    for i, content in enumerate(GEMMA_TURN_TOKENS):
        tok["added_tokens"].append({"id": first + i, "content": content, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
    config = {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>",
              "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                       for a in tok["added_tokens"]},
              "chat_template": read_template("gemma3")}
    return tok, config


def derived_tokenizers(directory, out):
    """qwen2.5/, llama3.1/ and gemma/ under `out`, made from the real Qwen3, Llama 3 and Llama 2 files."""
    qwen = json.load(open(os.path.join(directory, "qwen3", "tokenizer.json"), encoding="utf-8"))
    qwen["added_tokens"] = [a for a in qwen["added_tokens"] if a["id"] < 151665]
    qwen_config = json.load(open(os.path.join(directory, "qwen3", "tokenizer_config.json"), encoding="utf-8"))
    qwen_config["added_tokens_decoder"] = {k: v for k, v in qwen_config["added_tokens_decoder"].items() if int(k) < 151665}
    qwen_config["chat_template"] = read_template("qwen2.5")
    llama = json.load(open(os.path.join(directory, "llama3", "tokenizer.json"), encoding="utf-8"))
    for a in llama["added_tokens"]:
        a["content"] = llama31_name(a["id"], a["content"])
    llama_config = json.load(open(os.path.join(directory, "llama3", "tokenizer_config.json"), encoding="utf-8"))
    for k, v in llama_config.get("added_tokens_decoder", {}).items():
        v["content"] = llama31_name(int(k), v["content"])
    llama_config["chat_template"] = read_template("llama3.1")
    llama_config["eos_token"] = "<|eot_id|>"
    gemma, gemma_config = gemma_tokenizer(directory)
    for name, tok, config in [("qwen2.5", qwen, qwen_config), ("llama3.1", llama, llama_config),
                              ("gemma", gemma, gemma_config)]:
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False)
        with open(os.path.join(out, name, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False)


def answer_spans(text, marks):
    start, end = marks
    spans, at = [], 0
    while True:
        b = text.find(start, at)
        if b < 0:
            return spans
        b += len(start)
        e = text.index(end, b) + len(end)
        spans.append((b, e))
        at = e


def encode_rendered(tok, text, marks):
    fast = tok.backend_tokenizer
    fast.encode_special_tokens = False
    enc = fast.encode(text, add_special_tokens=False)
    spans = answer_spans(text, marks)
    counted = [int(any(b <= o[0] < e for b, e in spans)) for o in enc.offsets]
    last = [int(spans[-1][0] <= o[0] < spans[-1][1]) for o in enc.offsets]
    return enc.ids, counted, last


def render(tok, conversation, generation_prompt):
    kwargs = {"tools": conversation["tools"]} if "tools" in conversation else {}
    return tok.apply_chat_template(copy.deepcopy(conversation["messages"]), tokenize=False,
                                   add_generation_prompt=generation_prompt, **kwargs)


def tokenizers_ids(tok, text):
    """The ids the tokenizer.json itself gives (tokenizers), special tokens as tokens."""
    from tokenizers import Tokenizer
    fast = Tokenizer.from_file(os.path.join(tok.name_or_path, "tokenizer.json"))
    fast.encode_special_tokens = False
    return fast.encode(text, add_special_tokens=False).ids


def token_ids(encoding):
    return encoding["input_ids"] if isinstance(encoding, dict) or hasattr(encoding, "keys") else encoding


def format_entry(tok, name, conversations):
    entry = {"rendered": [], "ids": [], "counted": [], "counted_last": [], "prompts": [], "prompt_ids": []}
    for conversation in conversations:
        uses_tools = "tools" in conversation or any(m["role"] == "tool" for m in conversation["messages"])
        text = None
        if not uses_tools or name in WITH_TOOLS:
            try:
                text = render(tok, conversation, False)
            except Exception as e:  # the template's raise_exception
                print(f"chat: {name} refuses a conversation: {e}")
        if text is None:
            for key in ("rendered", "ids", "counted", "counted_last"):
                entry[key].append(None)
            continue
        trailing = TRAILING_PROMPT.get(name)
        if trailing and text.endswith(trailing):
            text = text[: -len(trailing)]
        ids, counted, last = encode_rendered(tok, text, FORMATS[name])
        kwargs = {"tools": conversation["tools"]} if "tools" in conversation else {}
        template_ids = token_ids(tok.apply_chat_template(copy.deepcopy(conversation["messages"]), tokenize=True, **kwargs))
        if list(template_ids[: len(ids)]) != ids or (not trailing and len(template_ids) != len(ids)):
            raise SystemExit(f"chat: {name}: the ids are not apply_chat_template's")
        if tokenizers_ids(tok, text) != ids:
            raise SystemExit(f"chat: {name}: tokenizers gives other ids than transformers")
        for key, value in zip(("rendered", "ids", "counted", "counted_last"), (text, ids, counted, last)):
            entry[key].append(value)
    for messages in PROMPTS:
        text = render(tok, {"messages": messages}, True)
        entry["prompts"].append(text)
        tok.backend_tokenizer.encode_special_tokens = False
        entry["prompt_ids"].append(tok.backend_tokenizer.encode(text, add_special_tokens=False).ids)
    return entry


def prompt_completion_entry(tok):
    """TRL's SFTTrainer on standard prompt-completion records: add_eos, then the ids of the prompt
    and of prompt + completion (tokenizer(text=...)), the completion mask from the prompt's length."""
    entry = {"ids": [], "counted": []}
    for record in PROMPT_COMPLETIONS:
        completion = record["completion"]
        if not completion.endswith(tok.eos_token):
            completion += tok.eos_token
        prompt_ids = tok(text=record["prompt"])["input_ids"]
        ids = tok(text=record["prompt"] + completion)["input_ids"]
        entry["ids"].append(ids)
        entry["counted"].append([0] * len(prompt_ids) + [1] * (len(ids) - len(prompt_ids)))
    return entry


def make_chat(directory):
    """chat.json's content, and the tokenizer directories it was made with (for trimming)."""
    from transformers import AutoTokenizer
    conversations = [{"messages": m} for m in BASIC + INST_CASES] + TOOLS
    derived = tempfile.mkdtemp(prefix="chat-tokenizers-")
    derived_tokenizers(directory, derived)
    sources = {"llama3": os.path.join(directory, "llama3"), "qwen3": os.path.join(directory, "qwen3"),
               "qwen2.5": os.path.join(derived, "qwen2.5"), "llama3.1": os.path.join(derived, "llama3.1"),
               "llama2": os.path.join(directory, "llama2"), "mistral": os.path.join(derived, "mistral"),
               "gemma": os.path.join(derived, "gemma")}
    mistral = json.load(open(os.path.join(directory, "llama2", "tokenizer.json"), encoding="utf-8"))
    mistral.update(MISTRAL_PIPELINE)
    os.makedirs(sources["mistral"])
    with open(os.path.join(sources["mistral"], "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(mistral, f, ensure_ascii=False)
    shutil.copy(os.path.join(directory, "llama2", "tokenizer_config.json"), sources["mistral"])
    out = {"conversations": conversations, "prompts": PROMPTS, "formats": {}}
    for name in FORMATS:
        tok = AutoTokenizer.from_pretrained(sources[name])
        entry = {"tokenizer": "trimmed/" + ("llama2" if name in TEMPLATE_FILES else os.path.basename(sources[name]))}
        if name in PIPELINES:
            entry["pipeline"] = PIPELINES[name][0]
        if name in TEMPLATE_FILES:
            tok.chat_template = read_template(TEMPLATE_FILES[name])
            entry["template"] = f"templates/{TEMPLATE_FILES[name]}.jinja"
        out["formats"][name] = dict(entry, **format_entry(tok, name, conversations))
    out["prompt_completion"] = {"records": PROMPT_COMPLETIONS, "tokenizers": {}}
    for name in ["qwen3", "llama3", "llama2", "qwen2.5"]:
        tok = AutoTokenizer.from_pretrained(sources[name])
        out["prompt_completion"]["tokenizers"][name] = dict(tokenizer="trimmed/" + name, **prompt_completion_entry(tok))
    return out, sources


def chat_texts(chat):
    """Every text the trimmed tokenizers must encode as the full ones do."""
    texts = []
    for entry in chat["formats"].values():
        texts += [t for t in entry["rendered"] if t is not None] + entry["prompts"]
    for record in chat["prompt_completion"]["records"]:
        texts += [record["prompt"], record["prompt"] + record["completion"]]
    return texts
