// Tokenizer throughput: encodes a text file, cut into documents of about 8 KB at line ends, on N
// threads, and prints MB/s (best of R runs), the number of ids and their FNV-1a hash (to compare
// with bench/tokenize/reference.py, which cuts the same documents).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tokenizer/tokenizer.hpp"

namespace {

std::vector<std::string_view> documents(std::string_view text, size_t at_least) {
  std::vector<std::string_view> docs;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', std::min(begin + at_least, text.size()) - 1);
    end = end == std::string_view::npos ? text.size() : end + 1;
    docs.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return docs;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zerotrain's tokenizer: MB/s on a text file"};
  std::string tokenizer_path, text_path;
  int threads = 2, repeat = 3;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer directory or file")->required();
  app.add_option("--text", text_path, "UTF-8 text")->required();
  app.add_option("--threads", threads, "threads")->capture_default_str();
  app.add_option("--repeat", repeat, "runs (the best is reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto t0 = std::chrono::steady_clock::now();
  const zt::Tokenizer tokenizer = zt::Tokenizer::load(tokenizer_path);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream file(text_path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  const auto docs = documents(text, 8192);

  std::vector<std::vector<int32_t>> ids(docs.size());
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    for (auto& v : ids) std::vector<int32_t>().swap(v);
    std::atomic<size_t> next{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (size_t d; (d = next++) < docs.size();) tokenizer.encode(docs[d], ids[d]);
      });
    for (auto& t : pool) t.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  uint64_t hash = 0xCBF29CE484222325ull, count = 0;
  for (const auto& v : ids)
    for (int32_t id : v) {
      ++count;
      for (int b = 0; b < 4; ++b) hash = (hash ^ ((uint32_t(id) >> (8 * b)) & 0xFF)) * 0x100000001B3ull;
    }
  fmt::print("zerotrain  {:>7.1f} MB/s  {} ids  hash {:016x}  ({:.1f} MB in {} documents, {} threads, best of {}; "
             "load {:.2f} s)\n",
             double(text.size()) / 1e6 / best, count, hash, double(text.size()) / 1e6, docs.size(), threads, repeat,
             load_s);
}
