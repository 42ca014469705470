// Reading tokenizer.json (and GPT-2's vocab.json + merges.txt, and tokenizer_config.json) into a
// Tokenizer. Whatever it does not support is refused with the JSON path of the offending entry.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "data/read_only_file.hpp"
#include "tokenizer/pipeline.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_files.hpp"

namespace zt {

using nlohmann::json;
using Pipeline = Tokenizer::Pipeline;

class TokenizerLoader {
public:
  explicit TokenizerLoader(std::string where) : where_(std::move(where)) {}

  Tokenizer from_json(const json& j) {
    if (!j.is_object()) bad("", "not a JSON object");
    Tokenizer t;
    Pipeline& p = *t.pipeline_;
    if (auto* n = member(j, "normalizer")) add_normalizer(*n, "normalizer", p);
    if (auto* n = member(j, "pre_tokenizer")) add_pre_tokenizer(*n, "pre_tokenizer", p);
    if (auto* n = member(j, "decoder")) add_decoder(*n, "decoder", p);
    t.model_ = model(j, byte_level_);
    if (auto* n = member(j, "added_tokens")) t.added_ = AddedTokens(added_tokens(*n));
    if (auto* n = member(j, "post_processor")) t.post_bos_ = post_processor_bos(*n, "post_processor");
    finish(t);
    return t;
  }

  // GPT-2's two files: byte-level BPE over the GPT-2 pattern, <|endoftext|> its special token.
  Tokenizer from_vocab_merges(const std::string& vocab_path, const std::string& merges_path) {
    const json vocab = parse_file(vocab_path);
    if (!vocab.is_object()) fail("{}: expected a JSON object of token -> id", vocab_path);
    std::vector<std::pair<std::string, int32_t>> entries;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer()) fail("{}: \"{}\": the id is not an integer", vocab_path, it.key());
      entries.emplace_back(it.key(), it.value().get<int32_t>());
    }
    std::vector<std::pair<std::string, std::string>> merges;
    const std::string text = read_file(merges_path);
    size_t line_number = 0;
    for (size_t begin = 0; begin < text.size();) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + begin, end - begin);
      ++line_number;
      begin = end + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
      const size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
        fail("{}:{}: expected two tokens separated by one space, got \"{}\"", merges_path, line_number, line);
      merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
    }
    Tokenizer t;
    Pipeline& p = *t.pipeline_;
    p.splits.push_back({Pipeline::Split::Pattern, SplitPattern::Gpt2});
    p.decoders.push_back({Pipeline::Decoder::ByteLevel});
    BpeOptions options;
    options.byte_level = true;
    t.model_ = BpeModel(entries, merges, options, vocab_path + " and " + merges_path);
    if (auto eot = vocab.find("<|endoftext|>"); eot != vocab.end())
      t.added_ = AddedTokens({AddedToken{"<|endoftext|>", eot->get<int32_t>(), true}});
    finish(t);
    return t;
  }

  static std::string read_file(const std::string& path) {
    ReadOnlyFile file(path);
    std::string text(file.size(), '\0');
    file.read(0, text.size(), text.data());
    return text;
  }

  static json parse_file(const std::string& path) {
    try {
      return json::parse(read_file(path));
    } catch (const json::parse_error& e) {
      fail("{}: not valid JSON: {}", path, e.what());
    }
  }

  // bos_token, eos_token and chat_template of tokenizer_config.json.
  static void read_config(Tokenizer& t, const std::string& path) {
    const json j = parse_file(path);
    auto token = [&](const char* key) -> std::string {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) return "";
      if (it->is_string()) return it->get<std::string>();
      if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"];
      fail("{}: {}: expected a string or an object with \"content\"", path, key);
    };
    t.bos_token_ = token("bos_token");
    t.eos_token_ = token("eos_token");
    if (auto it = j.find("chat_template"); it != j.end()) {
      if (it->is_string()) {
        t.chat_template_ = it->get<std::string>();
      } else if (it->is_array()) {  // named templates: the default one
        for (const json& named : *it)
          if (named.is_object() && named.value("name", "") == "default" && named.contains("template"))
            t.chat_template_ = named["template"].get<std::string>();
      }
    }
  }

private:
  [[noreturn]] void bad(const std::string& path, const std::string& what) const {
    if (path.empty()) fail("{}: {}", where_, what);
    fail("{}: {}: {}", where_, path, what);
  }
  static const json* member(const json& j, const char* key) {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::string string_at(const json& j, const char* key, const std::string& path,
                        const char* otherwise = nullptr) const {
    const json* v = member(j, key);
    if (!v && otherwise) return otherwise;
    if (!v || !v->is_string()) bad(path + "." + key, "expected a string");
    return v->get<std::string>();
  }
  bool bool_at(const json& j, const char* key, bool otherwise, const std::string& path) const {
    const json* v = member(j, key);
    if (!v) return otherwise;
    if (!v->is_boolean()) bad(path + "." + key, "expected true or false");
    return v->get<bool>();
  }
  std::string type_of(const json& j, const std::string& path) const {
    if (!j.is_object()) bad(path, "expected an object");
    return string_at(j, "type", path);
  }
  const json& array_at(const json& j, const char* key, const std::string& path) const {
    const json* v = member(j, key);
    if (!v || !v->is_array()) bad(path + "." + key, "expected an array");
    return *v;
  }
  // A {"String": s} pattern; a regex is refused.
  std::string string_pattern(const json& j, const std::string& path) const {
    const json* pattern = member(j, "pattern");
    if (!pattern || !pattern->is_object()) bad(path + ".pattern", "expected {\"String\": ...}");
    if (!member(*pattern, "String"))
      bad(path + ".pattern", "only String patterns are supported here, not " + pattern->dump());
    return string_at(*pattern, "String", path + ".pattern");
  }

  void add_normalizer(const json& n, const std::string& path, Pipeline& p) {
    const std::string type = type_of(n, path);
    if (type == "Sequence") {
      const json& all = array_at(n, "normalizers", path);
      for (size_t i = 0; i < all.size(); ++i) add_normalizer(all[i], fmt::format("{}.normalizers[{}]", path, i), p);
    } else if (type == "NFC") {
      p.normalizers.push_back({Pipeline::Normalizer::Nfc});
    } else if (type == "Prepend") {
      p.normalizers.push_back({Pipeline::Normalizer::Prepend, string_at(n, "prepend", path)});
    } else if (type == "Replace") {
      p.normalizers.push_back({Pipeline::Normalizer::Replace, string_pattern(n, path), string_at(n, "content", path)});
    } else {
      bad(path + ".type", "normalizer \"" + type + "\" is not supported (supported: Sequence, NFC, Prepend, Replace)");
    }
  }

  void add_pre_tokenizer(const json& n, const std::string& path, Pipeline& p) {
    const std::string type = type_of(n, path);
    const bool first = p.splits.empty() && p.metaspace.empty() && !byte_level_;
    if (type == "Sequence") {
      const json& all = array_at(n, "pretokenizers", path);
      for (size_t i = 0; i < all.size(); ++i)
        add_pre_tokenizer(all[i], fmt::format("{}.pretokenizers[{}]", path, i), p);
    } else if (type == "Split") {
      const json* pattern = member(n, "pattern");
      const json* regex = pattern && pattern->is_object() ? member(*pattern, "Regex") : nullptr;
      if (!regex || !regex->is_string()) bad(path + ".pattern", "only Regex patterns are supported");
      auto known = split_pattern_of_regex(regex->get<std::string>());
      if (!known)
        bad(path + ".pattern.Regex", "no scanner for this regex (there are scanners for the patterns of GPT-2, "
                                     "Llama 3, Qwen2 and Mistral-Nemo): " + regex->get<std::string>());
      if (string_at(n, "behavior", path) != "Isolated" || bool_at(n, "invert", false, path))
        bad(path, "only behavior \"Isolated\" without invert is supported");
      p.splits.push_back({Pipeline::Split::Pattern, *known});
    } else if (type == "ByteLevel") {
      if (bool_at(n, "add_prefix_space", false, path)) {
        if (!first) bad(path + ".add_prefix_space", "supported only in the first pre-tokenizer");
        p.prefix_space = true;
      }
      byte_level_ = true;
      if (bool_at(n, "use_regex", true, path)) p.splits.push_back({Pipeline::Split::Pattern, SplitPattern::Gpt2});
    } else if (type == "Metaspace") {
      if (!first) bad(path, "Metaspace is supported only as the first pre-tokenizer");
      p.metaspace = string_at(n, "replacement", path, "\xE2\x96\x81");
      p.metaspace_prepend = prepend_scheme(n, path);
      if (bool_at(n, "split", true, path)) {
        Pipeline::Split s{Pipeline::Split::BeforeDelimiter};
        s.delimiter = p.metaspace;
        p.splits.push_back(s);
      }
    } else if (type == "Digits") {
      Pipeline::Split s{Pipeline::Split::Digits};
      s.individual_digits = bool_at(n, "individual_digits", false, path);
      p.splits.push_back(s);
    } else {
      bad(path + ".type", "pre-tokenizer \"" + type + "\" is not supported (supported: Sequence, Split, ByteLevel, "
                          "Metaspace, Digits)");
    }
  }

  Pipeline::PrependScheme prepend_scheme(const json& n, const std::string& path) const {
    if (const json* scheme = member(n, "prepend_scheme")) {
      const std::string s = scheme->is_string() ? scheme->get<std::string>() : "";
      if (s == "always") return Pipeline::PrependScheme::Always;
      if (s == "first") return Pipeline::PrependScheme::First;
      if (s == "never") return Pipeline::PrependScheme::Never;
      bad(path + ".prepend_scheme", "expected \"always\", \"first\" or \"never\"");
    }
    return bool_at(n, "add_prefix_space", true, path) ? Pipeline::PrependScheme::Always
                                                      : Pipeline::PrependScheme::Never;
  }

  void add_decoder(const json& n, const std::string& path, Pipeline& p) {
    using D = Pipeline::Decoder;
    const std::string type = type_of(n, path);
    if (type == "Sequence") {
      const json& all = array_at(n, "decoders", path);
      for (size_t i = 0; i < all.size(); ++i) add_decoder(all[i], fmt::format("{}.decoders[{}]", path, i), p);
    } else if (type == "ByteLevel") {
      p.decoders.push_back({D::ByteLevel});
    } else if (type == "Replace") {
      p.decoders.push_back({D::Replace, string_pattern(n, path), string_at(n, "content", path)});
    } else if (type == "ByteFallback") {
      p.decoders.push_back({D::ByteFallback});
    } else if (type == "Fuse") {
      p.decoders.push_back({D::Fuse});
    } else if (type == "Strip") {
      D d{D::Strip, string_at(n, "content", path)};
      d.start = n.value("start", 0);
      d.stop = n.value("stop", 0);
      p.decoders.push_back(d);
    } else if (type == "Metaspace") {
      D d{D::Metaspace, string_at(n, "replacement", path, "\xE2\x96\x81")};
      d.strip_first_space = prepend_scheme(n, path) != Pipeline::PrependScheme::Never;
      p.decoders.push_back(d);
    } else {
      bad(path + ".type", "decoder \"" + type + "\" is not supported (supported: Sequence, ByteLevel, Replace, "
                          "ByteFallback, Fuse, Strip, Metaspace)");
    }
  }

  BpeModel model(const json& j, bool byte_level) const {
    const json* m = member(j, "model");
    if (!m || !m->is_object()) bad("model", "missing");
    const std::string type = string_at(*m, "type", "model", "BPE");
    if (type != "BPE") bad("model.type", "\"" + type + "\": only BPE models are supported");
    if (const json* dropout = member(*m, "dropout"); dropout && !(dropout->is_number() && dropout->get<double>() == 0))
      bad("model.dropout", "BPE dropout is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (!string_at(*m, key, "model", "").empty()) bad(std::string("model.") + key, "not supported");
    const json* vocab = member(*m, "vocab");
    if (!vocab || !vocab->is_object()) bad("model.vocab", "expected an object of token -> id");
    std::vector<std::pair<std::string, int32_t>> entries;
    entries.reserve(vocab->size());
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
      if (!it.value().is_number_integer()) bad("model.vocab", "\"" + it.key() + "\": the id is not an integer");
      entries.emplace_back(it.key(), it.value().get<int32_t>());
    }
    const json& merge_list = array_at(*m, "merges", "model");
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(merge_list.size());
    for (size_t i = 0; i < merge_list.size(); ++i) {
      const json& merge = merge_list[i];
      if (merge.is_string()) {  // "a b"
        const std::string& s = merge.get_ref<const std::string&>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          bad(fmt::format("model.merges[{}]", i), "expected two tokens separated by one space, got \"" + s + "\"");
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
        merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
      } else {
        bad(fmt::format("model.merges[{}]", i), "expected \"a b\" or [\"a\", \"b\"]");
      }
    }
    BpeOptions options;
    options.byte_level = byte_level;
    options.ignore_merges = bool_at(*m, "ignore_merges", false, "model");
    options.byte_fallback = bool_at(*m, "byte_fallback", false, "model");
    options.fuse_unk = bool_at(*m, "fuse_unk", false, "model");
    options.unk_token = string_at(*m, "unk_token", "model", "");
    return BpeModel(entries, merges, options, where_);
  }

  std::vector<AddedToken> added_tokens(const json& list) const {
    if (!list.is_array()) bad("added_tokens", "expected an array");
    std::vector<AddedToken> tokens;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = fmt::format("added_tokens[{}]", i);
      const json& a = list[i];
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer())
        bad(path, "expected an object with an integer id");
      AddedToken t;
      t.id = a["id"].get<int32_t>();
      t.content = string_at(a, "content", path);
      t.special = bool_at(a, "special", false, path);
      t.lstrip = bool_at(a, "lstrip", false, path);
      t.rstrip = bool_at(a, "rstrip", false, path);
      t.single_word = bool_at(a, "single_word", false, path);
      if (t.id < 0) bad(path + ".id", "negative");
      tokens.push_back(std::move(t));
    }
    return tokens;
  }

  // The special token a TemplateProcessing puts first in a single sequence.
  std::optional<int32_t> post_processor_bos(const json& n, const std::string& path) const {
    const std::string type = n.is_object() ? n.value("type", "") : "";
    if (type == "Sequence" && n.contains("processors") && n["processors"].is_array()) {
      for (size_t i = 0; i < n["processors"].size(); ++i)
        if (auto bos = post_processor_bos(n["processors"][i], fmt::format("{}.processors[{}]", path, i))) return bos;
      return std::nullopt;
    }
    if (type != "TemplateProcessing") return std::nullopt;
    const json* single = member(n, "single");
    if (!single || !single->is_array() || single->empty() || !(*single)[0].contains("SpecialToken"))
      return std::nullopt;
    const std::string name = (*single)[0]["SpecialToken"].value("id", "");
    const json* specials = member(n, "special_tokens");
    if (!specials || !specials->contains(name)) bad(path + ".special_tokens", "no entry for \"" + name + "\"");
    const json& ids = (*specials)[name]["ids"];
    if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer())
      bad(path + ".special_tokens." + name + ".ids", "expected one id");
    return ids[0].get<int32_t>();
  }

  static void finish(Tokenizer& t) {
    Pipeline& p = *t.pipeline_;
    t.vocab_size_ = t.model_.id_limit();
    for (const AddedToken& a : t.added_.tokens()) t.vocab_size_ = std::max(t.vocab_size_, a.id + 1);
    t.added_index_.assign(size_t(t.vocab_size_), -1);
    for (size_t i = 0; i < t.added_.tokens().size(); ++i) t.added_index_[size_t(t.added_.tokens()[i].id)] = int32_t(i);
    p.decodes_bytes_only = t.model_.options().byte_level && p.decoders.size() == 1 &&
                           p.decoders[0].kind == Pipeline::Decoder::ByteLevel;
    // SentencePiece-style text without a pre-tokenizer is one word for BPE (Llama 2's
    // tokenizer.json): where no merge can join a word to the ▁ after it, words cut before each
    // ▁ give the same ids, and cache.
    const std::string metaspace = "\xE2\x96\x81";
    const bool writes_metaspace =
        !p.metaspace.empty() || std::any_of(p.normalizers.begin(), p.normalizers.end(), [&](const auto& n) {
          return n.kind == Pipeline::Normalizer::Replace && n.replacement == metaspace;
        });
    if (p.splits.empty() && !t.model_.options().byte_level && writes_metaspace && !t.model_.joins_before(metaspace)) {
      Pipeline::Split s{Pipeline::Split::BeforeDelimiter};
      s.delimiter = metaspace;
      s.runs = true;
      p.splits.push_back(s);
    }
    const bool added_line_break =
        std::any_of(t.added_.tokens().begin(), t.added_.tokens().end(),
                    [](const AddedToken& a) { return a.content.find('\n') != std::string::npos; });
    const bool replaced_line_break = std::any_of(p.normalizers.begin(), p.normalizers.end(), [](const auto& n) {
      return (n.text + n.replacement).find('\n') != std::string::npos;
    });
    const bool pattern_split = std::any_of(p.splits.begin(), p.splits.end(),
                                           [](const auto& s) { return s.kind == Pipeline::Split::Pattern; });
    p.cuttable = !added_line_break && !replaced_line_break && (pattern_split || !t.model_.line_break_merges());
  }

  std::string where_;
  bool byte_level_ = false;
};

Tokenizer Tokenizer::from_json(const nlohmann::json& tokenizer_json, const std::string& where) {
  Tokenizer t = TokenizerLoader(where).from_json(tokenizer_json);
  t.source_ = where;
  return t;
}

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const TokenizerFiles files = locate_tokenizer_files(path);
  const fs::path dir = files.dir, json_file = files.json, vocab = files.vocab, merges = files.merges;
  Tokenizer t;
  if (!json_file.empty()) {
    t = from_json(TokenizerLoader::parse_file(json_file.string()), json_file.string());
  } else {
    t = TokenizerLoader(vocab.string()).from_vocab_merges(vocab.string(), merges.string());
    t.source_ = vocab.string() + " + " + merges.filename().string();
  }
  if (const fs::path config = dir / "tokenizer_config.json"; fs::exists(config, ec))
    TokenizerLoader::read_config(t, config.string());
  return t;
}

}  // namespace zt
