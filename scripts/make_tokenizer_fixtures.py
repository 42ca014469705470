#!/usr/bin/env python3
"""Reference fixtures for the tokenizer tests (tests/tokenizer), from Hugging Face's own libraries.

    python3 scripts/make_tokenizer_fixtures.py [--corpus] [--chat-only] [--tokenizers DIR]

DIR (default ../shared/tokenizers) holds gpt2/ (vocab.json + merges.txt), llama3/, qwen3/ and
llama2/ (tokenizer.json, tokenizer_config.json). Needs `tokenizers`, `transformers`, `tiktoken` and
`regex`; the tests need none of them: they read what this writes to tests/fixtures/tokenizer/:

  corpus.jsonl  the text: {"source", "text"} per sample, a few MB of prose in many scripts (from the
                machine's documentation and message catalogues), code, numbers, whitespace runs,
                emoji, written edge cases and seeded random strings. Written only with --corpus
                (from /usr/share of a Debian machine); otherwise read as committed, so the ids can
                be remade anywhere.
  ids.json      per tokenizer and sample: the number of ids and their FNV-1a 64 hash (of the ids as
                little-endian uint32); the ids in full for the written and random samples. Special
                tokens' text is text (tokenizers' encode_special_tokens), as in documents.
  specials.json strings holding special tokens' text, encoded with and without them as tokens.
  splits.json   per pre-tokenizer regex and sample: the hash of the match boundaries (as uint32 end
                offsets in bytes) from the `regex` module, for the scanners of lib/tokenizer.
  nfc.json      strings and their NFC by Hugging Face's NFC normalizer (Qwen's), which differs from
                unicodedata's on the marks added to Unicode since its tables were made.
  chat.json     conversations (tool calls among them) as transformers' apply_chat_template renders
                them with the templates of Llama 3, Llama 3.1, Qwen2.5, Qwen3, Llama 2, Mistral and
                Gemma 3, their ids, and which
                ids are the assistants' answers; generation prompts (scripts/chat_fixtures.py).
  variants.json pipelines none of the four files has, on the trimmed vocabularies: Metaspace
                pre-tokenizers (Mistral's newer files), ByteLevel with a prefix space, Digits, the
                Mistral-Nemo (Tekken) Split regex, added tokens that strip spaces or stand alone: the tokenizer.json of each (the pieces that
                replace the base file's) and the ids tokenizers gives on the written samples.
  trimmed/      the four tokenizers, and chat_fixtures.py's Qwen2.5, Llama 3.1 and Gemma, cut down to the vocabulary and merges that encoding the "CI
                part" of the corpus (in_ci_part) and the chat conversations uses, ids unchanged:
                a merge that never fires on a text cannot change its ids, so these give the real
                files' ids on that text (checked here with tokenizers), and the tests run on any
                machine without the real files.
"""
import argparse
import glob
import heapq
import gettext
import gzip
import json
import os
import random
import struct
import sys
import sysconfig
import unicodedata

import chat_fixtures

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
SAMPLE_BYTES = 4096

FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def fnv64(data: bytes) -> str:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def ids_hash(ids):
    return fnv64(struct.pack(f"<{len(ids)}I", *ids))


# ---------------------------------------------------------------------------------------------
# The corpus


def chunks(text, limit=SAMPLE_BYTES):
    """Cuts text into pieces of at most `limit` UTF-8 bytes, at line ends where possible."""
    out, current, size = [], [], 0
    for line in text.splitlines(keepends=True):
        n = len(line.encode())
        while n > limit:  # a very long line: cut by characters
            head, line = line[: limit // 4], line[limit // 4:]
            out.append(head)
            n = len(line.encode())
        if size + n > limit and current:
            out.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += n
    if current:
        out.append("".join(current))
    return out


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def take(paths, budget, source):
    samples = []
    for path in paths:
        if budget <= 0:
            break
        text = read_text(path)
        if not text:
            continue
        for piece in chunks(text)[:4]:
            samples.append({"source": f"{source}:{os.path.relpath(path, '/')}", "text": piece})
            budget -= len(piece.encode())
    return samples


def translations(lang, budget):
    samples, texts = [], []
    for path in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:
            continue
        texts += [v for k, v in sorted(catalog.items(), key=lambda kv: str(kv[0])) if k and v.strip()]
        if sum(len(t.encode()) for t in texts) > budget:
            break
    body = "\n".join(texts)
    for piece in chunks(body):
        if budget <= 0:
            break
        samples.append({"source": f"messages:{lang}", "text": piece})
        budget -= len(piece.encode())
    return samples


EDGE_CASES = [
    "Hello world! It's a test. They'll say we'd've done it; I'm sure you're right, she's here.",
    "IT'S LOUD: THEY'LL, WE'D, I'M, YOU'RE, WE'VE, 'S 'T 'RE 'VE 'M 'LL 'D 'ſ 'Ŀ x'ſy",
    "'hello' \"quoted\" (parens) [brackets] {braces} <angle> a'b a''b '''",
    "tabs\tand\t\tmore\ttabs\n\n\nthree newlines\r\nwindows\r\n\r\nline\rcarriage",
    "spaces:  two   three    four     five      six       seven        end",
    "trailing spaces   \n   leading spaces\n \n  \n   \n\t \n \t\n",
    "   ", " ", "\n", "\t", "a", "", " a", "a ", "  a", "a  ",
    "\u00a0nbsp\u00a0\u00a0two\u2028line sep\u2029para sep\u3000ideographic\u2003em\u205fmath\u1680ogham\u0085nel",
    "controls \x00\x01\x02\x07\x08\x0b\x0c\x0e\x1b\x1c\x1d\x1e\x1f\x7f end",
    "numbers 0 12 345 6789 12345678901234567890 3.14159 -2.5e-10 1,000,000 0x1F 1_000 ½ ¾ ² ³ Ⅻ ⅷ ① ⑳",
    "digits in scripts: ٠١٢٣٤٥٦٧٨٩ ۰۱۲۳ ०१२३४५ ০১২৩ ௧௨௩ ๑๒๓ ０１２３４５ 𝟘𝟙𝟚 ᛮᛯ 〇〡〢",
    "emoji 😀😃😄😁 👍🏽👍🏿 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵🇺🇸🇪🇺 ❤️ ✌🏼 🧑🏾‍🚀 *️⃣ #️⃣ 1️⃣ 🫠🫶",
    "CJK 日本語のテキストです。中文文本，繁體中文。한국어 텍스트입니다. ｶﾀｶﾅ 半角",
    "RTL العربية نص عربي مع تشكيل: مُحَمَّدٌ. עברית עם ניקוד: שָׁלוֹם. فارسی",
    "Indic हिन्दी पाठ, বাংলা লেখা, தமிழ் உரை, తెలుగు, ಕನ್ನಡ, മലയാളം, ગુજરાતી, ਪੰਜਾਬੀ, ଓଡ଼ିଆ, සිංහල",
    "SE Asia ภาษาไทยไม่มีช่องว่าง ພາສາລາວ ខ្មែរ မြန်မာ ᜆᜄᜎᜓᜄ᜔",
    "Other Ελληνικά κείμενο ΑΘΗΝΑ Ὀδυσσεύς. Кириллица ЁЖИК ёжик. Ქართული ქართული. Հայերեն. አማርኛ. ᏣᎳᎩ",
    "decomposed: e\u0301 a\u0300 n\u0303 o\u0308 u\u030a c\u0327 A\u030a \u212b \u2126 e\u0301\u0327 q\u0307\u0323 a\u0328\u0301",
    "composed: é à ñ ö ů ç Å ḉ ṩ ǘ ȫ ẫ ệ Ǖ ǭ",
    "jamo: \u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af \u1100\u1161 \u110b\u1175\u11bc ᄀ ᅡ ᆨ 각",
    "marks: ⃝ a\u20dd \u0301alone x\u0345\u0301 ा ि ँ ़ ् \u093f\u0902 ̈̈̈̈ ﷽ ꙰",
    "cases: CamelCaseWord HTTPServer iPhone XMLHttpRequest ǅungla ǈub ǋu Ⅰⅱ ʰʷ ᵃᵇ ǀǁǂ ªº ſtraße STRASSE ß ẞ",
    "letters+marks: naïve café résumé Zürich Ångström Dvořák Łódź Ærø Þórr İstanbul ı",
    "math: ∀x∈ℝ: x² ≥ 0 ⇒ √x ∈ ℂ; ∑ᵢ aᵢ = ∫₀^∞ f(t) dt ≈ π·e ≠ ∞ ⊂ ⊆ ∪ ∩ ⟨ψ|φ⟩ ∂/∂t 𝔽 𝒜 𝕏",
    "symbols: © ® ™ § ¶ † ‡ • … ‰ ′ ″ ‹ › « » „ “ ” ‘ ’ ‚ — – ‐ ¡ ¿ € £ ¥ ₹ ₿ ¢ ° ± × ÷ ¬",
    "code: def f(x):\n    return x**2 + 1  # comment\n\nif __name__ == '__main__':\n\tprint(f\"{f(3)=}\")\n",
    "code: int main(int argc, char** argv) { for (int i = 0; i < argc; ++i) printf(\"%s\\n\", argv[i]); return 0; }",
    "json: {\"key\": [1, 2.5, -3e8, true, null], \"nested\": {\"a\": \"b\\u00e9\"}}\n",
    "url: https://example.com/path/to/page?query=1&x=y#frag mailto:someone@example.org /usr/share/doc/",
    "paths: C:\\Windows\\System32\\drivers\\etc\\hosts ~/.config/app/settings.ini ../../up/../and/./here",
    "specials in text: <|endoftext|> <s> </s> <unk> <|begin_of_text|> <|im_start|>user<|im_end|> <think>x</think> <|eot_id|>",
    "punct runs: !!!??? ... ---- ==== ***** ///// \\\\\\\\ ;;;; :::: ,,,, '''' \"\"\"\" ~~~~ ```` ^^^^",
    "mixed\n!\n/x\n?/\n\n/\n//\n \n/ \n!\r\n/\r\n",
    "a" * 3000,
    " " * 1000 + "x",
    "\n" * 200 + "y",
    "1234567890" * 60,
    "ab" * 1500,
    "ab cd " * 400,
    "😀" * 300,
    "é" * 400 + "e\u0301" * 400,
    "한국어" * 200,
    "日本" * 300,
    "\t \n" * 200,
    "AbCdEfGhIjKlMnOpQrStUvWxYz" * 40,
    "aGVsbG8gd29ybGQhIFRoaXMgaXMgYSBsb25nIGJhc2U2NCBzdHJpbmcgd2l0aG91dCBhbnkgc3BhY2VzIGF0IGFsbA==" * 20,
    "▁ leading metaspace ▁▁ double ▁word and __under_scores__",
]


def random_strings(count, seed=20240520):
    """Strings drawn from characters of every class the scanners tell apart."""
    rng = random.Random(seed)
    pools = {
        "ascii": [chr(c) for c in range(32, 127)],
        "space": list(" \t\n\r\x0b\x0c\u00a0\u2028\u3000\u0085 "),
        "Lu": [c for c in "ABCXYZÀÉÖĀĒΣΩДЖЯԱႠᏣⲀ𝐀"],
        "Ll": [c for c in "abcxyzàéöāēσωджяաⴀⲁ𝐚ß"],
        "Lt": list("ǅǈǋǲᾈᾘ"),
        "Lm": list("ʰʷˀˆᵃᵇᵐ々ーꜗ"),
        "Lo": list("あアカ中文한글אבגابتअकกขᄀ"),
        "M": ["\u0300", "\u0301", "\u0308", "\u0327", "\u093f", "\u0902", "\u094d", "\u20dd", "\u0e31", "\u05b7", "\u302a"],
        "N": list("0123456789½²Ⅻ٣४০௧๑０𝟙"),
        "P": list("!\"#%&'()*,-./:;?@[]_{}¡§«»‐–—‘’“”…‰‹›※"),
        "S": list("$+<=>^`|~¢£¤¥©®°±×÷€∀∑√∞≈≠☃★😀👍"),
        "C": ["\x00", "\x07", "\x1b", "\x1c", "\x1f", "\x7f", "\u200b", "\u200d", "\u2060", "\ufeff"],
    }
    names = sorted(pools)
    out = []
    for _ in range(count):
        n = rng.randint(50, 600)
        weights = [rng.random() for _ in names]
        chars = []
        for _ in range(n):
            pool = pools[rng.choices(names, weights)[0]]
            chars.append(rng.choice(pool))
            if rng.random() < 0.1:  # runs
                chars.append(chars[-1] * rng.randint(1, 5))
        out.append("".join(chars))
    return out


def build_corpus():
    samples = [{"source": "written", "text": t} for t in EDGE_CASES]
    samples += [{"source": "random", "text": t} for t in random_strings(60)]
    docs = sorted(glob.glob("/usr/share/doc/*/copyright"))
    samples += take(docs[::7], 200_000, "doc")
    samples += take(sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz"))[::11], 150_000, "doc")
    samples += take(sorted(glob.glob("/usr/share/man/man1/*.1.gz"))[::13], 120_000, "man")
    for lang in ["de", "fr", "es", "ru", "uk", "el", "pl", "tr", "vi", "cs", "hu", "fi", "eo", "ja", "zh_CN",
                 "zh_TW", "ko", "he", "ar", "fa", "hi", "bn", "ta", "te", "ml", "kn", "mr", "gu", "pa", "th",
                 "ka", "hy", "am", "km", "my", "si", "ne"]:
        samples += translations(lang, 30_000)
    site = sysconfig.get_paths()["purelib"]  # where tokenizers and transformers are installed
    code = sorted(glob.glob(f"{site}/tokenizers/**/*.py", recursive=True) +
                  glob.glob(f"{site}/jinja2/*.py") + glob.glob(f"{site}/transformers/models/llama/*.py"))
    samples += take(code, 250_000, "python")
    samples += take(sorted(glob.glob("/usr/include/*.h"))[::5], 150_000, "c")
    samples += take(sorted(glob.glob("/usr/share/X11/locale/en_US.UTF-8/Compose")), 60_000, "compose")
    with open(os.path.join(OUT, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")


def load_corpus():
    with open(os.path.join(OUT, "corpus.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# ---------------------------------------------------------------------------------------------
# References


def gpt2_references(directory):
    """GPT-2 from vocab.json + merges.txt, by tokenizers and by tiktoken (which must agree)."""
    import tiktoken
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    hf = Tokenizer(models.BPE.from_file(f"{directory}/vocab.json", f"{directory}/merges.txt"))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    vocab = json.load(open(f"{directory}/vocab.json", encoding="utf-8"))
    byte_of = byte_level_decoder()
    ranks = {bytes(byte_of[c] for c in token): i for token, i in vocab.items() if token != "<|endoftext|>"}
    tk = tiktoken.Encoding("gpt2-local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                           special_tokens={"<|endoftext|>": vocab["<|endoftext|>"]})
    return hf, tk


GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def byte_level_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def load_tokenizers(directory):
    from tokenizers import Tokenizer
    hf_gpt2, tk_gpt2 = gpt2_references(os.path.join(directory, "gpt2"))
    out = {"gpt2": hf_gpt2}
    for name in ["llama3", "qwen3", "llama2"]:
        out[name] = Tokenizer.from_file(os.path.join(directory, name, "tokenizer.json"))
    return out, tk_gpt2


def encode(tok, text, specials):
    tok.encode_special_tokens = not specials
    return tok.encode(text, add_special_tokens=False).ids


def make_ids(tokenizers, tk_gpt2, corpus):
    out = {}
    for name, tok in tokenizers.items():
        entry = {"samples": [], "ids": {}}
        for i, s in enumerate(corpus):
            ids = encode(tok, s["text"], False)
            if name == "gpt2":
                ref = tk_gpt2.encode_ordinary(s["text"])
                if ref != ids:
                    sys.exit(f"gpt2: tiktoken and tokenizers disagree on sample {i} ({s['source']})")
            entry["samples"].append([len(ids), ids_hash(ids)])
            if s["source"] == "written":
                entry["ids"][str(i)] = ids
        out[name] = entry
        print(f"ids: {name}: {sum(n for n, _ in entry['samples'])} ids", file=sys.stderr)
    return out


SPECIAL_STRINGS = [
    "<|endoftext|>Hello<|endoftext|> world <|endoftext|>",
    "<s>[INST] question [/INST] answer</s><s>",
    " <s> spaced <unk> tokens </s> ",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|reserved_special_token_3|>",
    "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nOK<|im_end|>",
    "<tool_call>{\"a\": 1}</tool_call><|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
    "<<|endoftext|>> <|endoftext|<|endoftext|>|> <|im_start|<|im_start|>",
]


def make_specials(tokenizers):
    out = {"strings": SPECIAL_STRINGS, "tokenizers": {}}
    for name, tok in tokenizers.items():
        out["tokenizers"][name] = {"with": [encode(tok, s, True) for s in SPECIAL_STRINGS],
                                   "without": [encode(tok, s, False) for s in SPECIAL_STRINGS]}
    return out


def make_splits(corpus):
    import regex
    from tokenizers import Tokenizer  # noqa: F401 (the patterns are the files' own)
    patterns = {
        "gpt2": GPT2_PATTERN,
        "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
        "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
        "tekken": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    }
    # The regex module's \s also takes U+001C..U+001F (Python's str.isspace); Oniguruma's and
    # Rust's \s are the White_Space property, which does not. Spell that out.
    white_space = r"[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    out = {}
    for name, pattern in patterns.items():
        p = pattern.replace(r"[^\s\p{L}\p{N}]", r"[^\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\p{L}\p{N}]")
        p = p.replace(r"(?!\S)", r"(?!" + white_space.replace("[", "[^", 1) + ")").replace(r"\s", white_space)
        compiled = regex.compile(p)
        hashes = []
        for s in corpus:
            ends, at = [], 0
            for m in compiled.finditer(s["text"]):
                if m.start() != at:
                    sys.exit(f"{name}: a gap before {m.start()}")
                at = m.end()
                ends.append(len(s["text"][:at].encode()))
            hashes.append(ids_hash(ends))
        out[name] = {"regex": pattern, "samples": hashes}
    return out


def make_nfc(corpus):
    from tokenizers.normalizers import NFC
    nfc = NFC()
    cases = []
    for cp in range(0x110000):
        c = chr(cp)
        if 0xD800 <= cp < 0xE000 or unicodedata.category(c) == "Cn":
            continue
        d = unicodedata.normalize("NFD", c)
        if d != c or unicodedata.combining(c):
            cases.append(d)
            cases.append(c)
    rng = random.Random(7)
    marks = [chr(c) for c in range(0x300, 0x370)] + ["\u0323", "\u0327", "\u093c", "\u05b0", "\u302a", "\u0f71", "\u0f72"]
    for _ in range(400):  # starters followed by marks in random order
        base = rng.choice("aeiouAEIOUcnsyzwxαεωιυкгиеᄀ각अ") + "".join(rng.choice(marks) for _ in range(rng.randint(1, 4)))
        cases.append(base)
    text = "\n".join(cases)  # a line break is a starter: each line normalizes on its own
    return {"unicode": unicodedata.unidata_version, "input": text, "expected": nfc.normalize_str(text)}


def in_ci_part(index, sample):
    """The samples the trimmed tokenizers cover (the test uses the same rule)."""
    return index % 3 == 0 or sample["source"] in ("written", "random")


def fired(tok, vocab, merges, ignore_merges, texts, plain_added):
    """The merge ranks that fire and the ids that occur when `tok` encodes `texts`, by BPE's rule:
    the lowest-ranked adjacent pair merges first."""
    rank = {(vocab[a], vocab[b]): (i, vocab[a + b]) for i, (a, b) in enumerate(merges)}
    splitter = None
    if plain_added:
        import re
        splitter = re.compile("|".join(re.escape(p) for p in sorted(plain_added, key=len, reverse=True)))
    ranks, used = set(), set()
    for text in texts:
        for piece in splitter.split(text) if splitter else [text]:
            if not piece:
                continue
            if tok.normalizer:
                piece = tok.normalizer.normalize_str(piece)
            words = [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(piece)] if tok.pre_tokenizer else [piece]
            for w in words:
                if ignore_merges and w in vocab:
                    used.add(vocab[w])
                    continue
                symbols = []
                for ch in w:
                    symbols += [vocab[ch]] if ch in vocab else [vocab[f"<0x{b:02X}>"] for b in ch.encode()]
                used.update(symbols)
                merge_word(symbols, rank, ranks, used)
    return ranks, used


def merge_word(ids, rank, ranks, used):
    """Merges a word's symbols in rank order (leftmost first among equals), through a queue of
    candidate pairs as tokenizers does; adds the ranks that fire and the ids made."""
    n = len(ids)
    nxt, prev, alive = list(range(1, n)) + [-1], list(range(-1, n - 1)), [True] * n
    queue = []

    def offer(i):
        j = nxt[i]
        if j >= 0 and (ids[i], ids[j]) in rank:
            r, new = rank[(ids[i], ids[j])]
            heapq.heappush(queue, (r, i, new))

    for i in range(n - 1):
        offer(i)
    while queue:
        r, i, new = heapq.heappop(queue)
        j = nxt[i] if alive[i] else -1
        if j < 0 or rank.get((ids[i], ids[j]), (0, -1))[1] != new:
            continue
        ranks.add(r)
        used.add(new)
        ids[i], alive[j], nxt[i] = new, False, nxt[j]
        if nxt[i] >= 0:
            prev[nxt[i]] = i
        if prev[i] >= 0:
            offer(prev[i])
        offer(i)


def trim_vocab(vocab, merges, ranks, used):
    keep_ids = set(used)
    for r in ranks:
        a, b = merges[r]
        keep_ids.update((vocab[a], vocab[b], vocab[a + b]))
    keep_ids.add(max(vocab.values()))  # the vocabulary keeps its size
    for token, i in vocab.items():  # bytes, byte fallback and named tokens stay
        if len(token) == 1 or (token.startswith("<") and token.endswith(">")):
            keep_ids.add(i)
    return ({t: i for t, i in vocab.items() if i in keep_ids}, [merges[r] for r in sorted(ranks)])


def make_trimmed(sources, corpus, chat):
    """The tokenizers of `sources` (name -> directory) trimmed to what the texts use."""
    from tokenizers import Tokenizer
    texts = [s["text"] for i, s in enumerate(corpus) if in_ci_part(i, s)]
    texts += chat_fixtures.chat_texts(chat) + SPECIAL_STRINGS
    out_dir = os.path.join(OUT, "trimmed")
    for name, directory in sources.items():
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        if name == "gpt2":
            tok, _ = gpt2_references(directory)
            vocab = json.load(open(os.path.join(directory, "vocab.json"), encoding="utf-8"))
            lines = open(os.path.join(directory, "merges.txt"), encoding="utf-8").read().split("\n")
            merges = [tuple(line.split(" ")) for line in lines[1:] if line]
            ranks, used = fired(tok, vocab, merges, False, texts, [])
            ranks2, used2 = fired(tok, vocab, merges, False, texts, ["<|endoftext|>"])
            ranks, used = ranks | ranks2, used | used2
            small_vocab, small_merges = trim_vocab(vocab, merges, ranks, used)
            with open(os.path.join(out_dir, name, "vocab.json"), "w", encoding="utf-8") as f:
                json.dump(small_vocab, f, ensure_ascii=False, separators=(",", ":"))
            with open(os.path.join(out_dir, name, "merges.txt"), "w", encoding="utf-8") as f:
                f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in small_merges))
            small, _ = gpt2_references(os.path.join(out_dir, name))
        else:
            path = os.path.join(directory, "tokenizer.json")
            j = json.load(open(path, encoding="utf-8"))
            tok = Tokenizer.from_file(path)
            model = j["model"]
            merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
            plain = [a["content"] for a in j["added_tokens"] if not a["special"]]
            every = [a["content"] for a in j["added_tokens"]]
            ranks, used = fired(tok, model["vocab"], merges, model.get("ignore_merges", False), texts, plain)
            ranks2, used2 = fired(tok, model["vocab"], merges, model.get("ignore_merges", False), texts, every)
            ranks, used = ranks | ranks2, used | used2
            model["vocab"], small_merges = trim_vocab(model["vocab"], merges, ranks, used)
            as_strings = merges and isinstance(j["model"]["merges"][0], str)
            model["merges"] = [f"{a} {b}" if as_strings else [a, b] for a, b in small_merges]
            small_path = os.path.join(out_dir, name, "tokenizer.json")
            with open(small_path, "w", encoding="utf-8") as f:
                json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
            config_path = os.path.join(directory, "tokenizer_config.json")
            config = json.load(open(config_path, encoding="utf-8"))
            with open(os.path.join(out_dir, name, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                json.dump({k: config[k] for k in ("bos_token", "eos_token", "chat_template") if k in config}, f,
                          ensure_ascii=False, indent=1)
            small = Tokenizer.from_file(small_path)
        # The trimmed tokenizer gives the full one's ids. (tokenizers numbers added tokens after the
        # entries of the vocabulary, not by their ids in the file, which the trimmed vocabulary no
        # longer fills: for those, the tokens are compared.)
        added = set(small.get_added_tokens_decoder().values()) if hasattr(small, "get_added_tokens_decoder") else set()
        added = {a.content for a in added}
        for text in texts:
            for specials in (False, True):
                small.encode_special_tokens = tok.encode_special_tokens = not specials
                a, b = tok.encode(text, add_special_tokens=False), small.encode(text, add_special_tokens=False)
                if [(t, None if t in added else i) for t, i in zip(a.tokens, a.ids)] != \
                        [(t, None if t in added else i) for t, i in zip(b.tokens, b.ids)]:
                    sys.exit(f"trimmed {name}: ids differ on {text[:80]!r}")
        print(f"trimmed {name}: {len(small_merges)} of {len(merges)} merges", file=sys.stderr)


METASPACE = "\u2581"
TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
                  r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
VARIANTS = {
    "llama2-metaspace-first": ("llama2", chat_fixtures.MISTRAL_PIPELINE),
    "llama2-metaspace-always-split": ("llama2", {
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": True},
        "decoder": {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": True}}),
    "llama2-added-token-options": ("llama2", {"added_tokens": [
        {"id": 0, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
        {"id": 1, "content": "<s>", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False, "special": True},
        {"id": 2, "content": "</s>", "single_word": True, "lstrip": False, "rstrip": False, "normalized": False, "special": True}]}),
    "gpt2-prefix-space": ("gpt2", {
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}}),
    "gpt2-digits": ("gpt2", {
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}}),
    "gpt2-tekken": ("gpt2", {
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": TEKKEN_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}}),
}


def gpt2_as_json(directory):
    """GPT-2's two files as a tokenizer.json."""
    vocab = json.load(open(os.path.join(directory, "vocab.json"), encoding="utf-8"))
    lines = open(os.path.join(directory, "merges.txt"), encoding="utf-8").read().split("\n")
    return {"version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                                "use_regex": True},
            "model": {"type": "BPE", "vocab": vocab, "merges": [line for line in lines[1:] if line]}}


def make_variants():
    from tokenizers import Tokenizer
    texts = [t for t in EDGE_CASES + SPECIAL_STRINGS if len(t) <= 600]
    out = {"texts": texts, "variants": {}}
    for name, (base, patch) in VARIANTS.items():
        base_dir = os.path.join(OUT, "trimmed", base)
        if base == "gpt2":
            j = gpt2_as_json(base_dir)
        else:
            j = json.load(open(os.path.join(base_dir, "tokenizer.json"), encoding="utf-8"))
        j.update(patch)
        tok = Tokenizer.from_str(json.dumps(j))
        specials = "added_tokens" in patch  # the added tokens' options matter where they are found
        out["variants"][name] = {"base": base, "patch": patch, "special_tokens": specials,
                                 "ids": [encode(tok, t, specials) for t in texts]}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="store_true", help="rebuild corpus.jsonl from this machine's files")
    parser.add_argument("--chat-only", action="store_true",
                        help="remake chat.json, the trimmed tokenizers and variants.json only (the others as committed)")
    parser.add_argument("--tokenizers", default=os.path.join(ROOT, "..", "..", "shared", "tokenizers"))
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.corpus:
        build_corpus()
    corpus = load_corpus()
    print(f"corpus: {len(corpus)} samples, {sum(len(s['text'].encode()) for s in corpus)} bytes", file=sys.stderr)

    def write(name, value):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")

    if not args.chat_only:
        tokenizers, tk_gpt2 = load_tokenizers(args.tokenizers)
        write("ids.json", make_ids(tokenizers, tk_gpt2, corpus))
        write("specials.json", make_specials(tokenizers))
        write("splits.json", make_splits(corpus))
        write("nfc.json", make_nfc(corpus))
    chat, chat_sources = chat_fixtures.make_chat(args.tokenizers)
    write("chat.json", chat)
    sources = {name: os.path.join(args.tokenizers, name) for name in ["gpt2", "llama3", "qwen3", "llama2"]}
    sources.update({name: chat_sources[name] for name in ["qwen2.5", "llama3.1", "gemma"]})
    make_trimmed(sources, corpus, chat)
    write("variants.json", make_variants())  # on the trimmed vocabularies


if __name__ == "__main__":
    main()
