// The shipped corpus: present, plain ASCII text, readable as the default dataset, train and val
// distinct. Its unigram entropy is the bar the toy model's loss must fall well below.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "data/dataset.hpp"

using namespace zt;

namespace {
std::string corpus(const char* name) { return std::string(ZT_SOURCE_DIR) + "/data/tinytext/" + name; }

double unigram_entropy(const std::vector<int32_t>& tokens, int* distinct) {
  std::vector<double> count(256, 0);
  for (int32_t t : tokens) count[size_t(t)] += 1;
  double h = 0;
  *distinct = 0;
  for (double c : count)
    if (c > 0) {
      ++*distinct;
      h -= c / double(tokens.size()) * std::log(c / double(tokens.size()));
    }
  return h;
}
}  // namespace

TEST_CASE("the shipped tinytext corpus", "[data][corpus]") {
  auto train = open_dataset(corpus("train.txt"), "auto");
  auto val = open_dataset(corpus("val.txt"), "auto");
  CHECK(train->format() == TokenFormat::Text);
  CHECK(train->vocab_size() == 256);
  CHECK(train->size() > 300000);
  CHECK(train->size() < 500000);
  CHECK(val->size() > 30000);
  CHECK(val->size() < train->size() / 4);
  for (auto* d : {train.get(), val.get()}) {
    std::vector<int32_t> tokens(static_cast<size_t>(d->size()));
    d->read(0, d->size(), tokens.data());
    for (int32_t t : tokens) REQUIRE(((t >= 32 && t < 127) || t == '\n'));  // printable ASCII lines
    int distinct = 0;
    double h = unigram_entropy(tokens, &distinct);
    INFO(d->path() << ": unigram entropy " << h << " nats, " << distinct << " distinct bytes");
    CHECK(h > 2.5);  // English letters, not a degenerate file
    CHECK(h < std::log(double(distinct)) - 0.5);
    CHECK_NOTHROW(d->check_vocab(128));
  }
  // Different books: the validation text does not start inside the training text.
  std::vector<int32_t> head(200);
  val->read(0, 200, head.data());
  std::string val_head(head.begin(), head.end());
  std::vector<int32_t> all(static_cast<size_t>(train->size()));
  train->read(0, train->size(), all.data());
  std::string train_text(all.begin(), all.end());
  CHECK(train_text.find(val_head.substr(0, 80)) == std::string::npos);
}
