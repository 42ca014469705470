#!/usr/bin/env python3
"""Throughput of tiktoken and Hugging Face tokenizers (their native builds) on the documents that
bench_tokenize encodes: the text file cut into documents of about 8 KB at line ends.

    reference.py --tokenizer DIR --text FILE [--threads 2] [--repeat 3]
    reference.py --make-text FILE [--megabytes 30]   # a text from this machine's documentation,
                                                     # message catalogues and Python sources

DIR is gpt2/ (vocab.json + merges.txt) or a directory with tokenizer.json of a byte-level BPE whose
ranks are its ids (Llama 3): tiktoken is built from the same files, offline. Prints MB/s, the
number of ids and their FNV-1a hash, as bench_tokenize does.
"""
import argparse
import glob
import gzip
import json
import os
import struct
import sys
import sysconfig
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from make_tokenizer_fixtures import GPT2_PATTERN, byte_level_decoder  # noqa: E402


def documents(text, at_least=8192):
    data = text.encode()
    docs, begin = [], 0
    while begin < len(data):
        end = data.find(b"\n", min(begin + at_least, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        docs.append(data[begin:end].decode())
        begin = end
    return docs


def fnv(ids_lists):
    h = 0xCBF29CE484222325
    count = 0
    for ids in ids_lists:
        count += len(ids)
        for b in struct.pack(f"<{len(ids)}I", *ids):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return count, h


def load(directory):
    import tiktoken
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    to_bytes = byte_level_decoder()
    if os.path.exists(os.path.join(directory, "tokenizer.json")):
        j = json.load(open(os.path.join(directory, "tokenizer.json"), encoding="utf-8"))
        hf = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        vocab = j["model"]["vocab"]
        pattern = [p for p in j["pre_tokenizer"]["pretokenizers"] if p["type"] == "Split"][0]["pattern"]["Regex"]
        specials = {a["content"]: a["id"] for a in j["added_tokens"]}
    else:
        hf = Tokenizer(models.BPE.from_file(f"{directory}/vocab.json", f"{directory}/merges.txt"))
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        vocab = json.load(open(f"{directory}/vocab.json", encoding="utf-8"))
        specials = {"<|endoftext|>": vocab.pop("<|endoftext|>")}
        pattern = GPT2_PATTERN
    ranks = {bytes(to_bytes[c] for c in t): i for t, i in vocab.items()}
    tk = tiktoken.Encoding("local", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    return hf, tk


def make_text(path, megabytes):
    site = sysconfig.get_paths()["purelib"]  # where transformers is installed
    sources = (sorted(glob.glob("/usr/share/doc/*/copyright")) + sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")) +
               sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")) +
               sorted(glob.glob(f"{site}/transformers/**/*.py", recursive=True)))
    sources = sources[::2]  # a mixture rather than the first kind alone
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        for p in sources:
            try:
                if p.endswith(".mo"):
                    import gettext
                    with open(p, "rb") as f:
                        text = "\n".join(v for v in gettext.GNUTranslations(f)._catalog.values() if v) + "\n"
                else:
                    text = (gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")).read().decode("utf-8")
            except Exception:
                continue
            out.write(text)
            written += len(text.encode())
            if written > megabytes * 1e6:
                break
    print(f"wrote {path}: {written / 1e6:.1f} MB", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer")
    parser.add_argument("--text")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--make-text")
    parser.add_argument("--megabytes", type=float, default=30)
    args = parser.parse_args()
    if args.make_text:
        make_text(args.make_text, args.megabytes)
        return
    os.environ["RAYON_NUM_THREADS"] = os.environ["RAYON_RS_NUM_CPUS"] = str(args.threads)
    hf, tk = load(args.tokenizer)
    text = open(args.text, encoding="utf-8", newline="").read()
    docs = documents(text)
    size = len(text.encode()) / 1e6
    hf.encode_special_tokens = True
    runs = {
        "tiktoken": lambda: tk.encode_ordinary_batch(docs, num_threads=args.threads),
        "tokenizers": lambda: [e.ids for e in hf.encode_batch_fast(docs, add_special_tokens=False)]
        if hasattr(hf, "encode_batch_fast") else [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)],
    }
    for name, run in runs.items():
        best, ids = 1e30, None
        for _ in range(args.repeat):
            start = time.perf_counter()
            ids = run()
            best = min(best, time.perf_counter() - start)
        count, h = fnv(ids)
        print(f"{name:<10} {size / best:>7.1f} MB/s  {count} ids  hash {h:016x}  ({size:.1f} MB in {len(docs)} documents, "
              f"{args.threads} threads, best of {args.repeat})")


if __name__ == "__main__":
    main()
