// zerotrain plot: round tick values, a well-formed SVG with one <path> per series and one point per
// record, runs overlaid, and one clear error for bad input.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "plot/curves.hpp"
#include "plot/nice_ticks.hpp"
#include "xml_check.hpp"

using namespace zt::plot;
using zt::test::parse_xml;
using zt::test::XmlElement;

namespace {

std::string scratch(const std::string& name) {
  static const auto dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("zt_test_plot_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = scratch(name);
  std::ofstream(path) << text;
  return path;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Points in a path's data: one per M or L command.
size_t points_in(const std::string& d) {
  size_t n = 0;
  for (char c : d) n += c == 'M' || c == 'L';
  return n;
}

// The points of each series of an SVG (by its title: run and series), and the SVG's texts (the
// charts' titles among them).
std::map<std::string, size_t> series_points(const XmlElement& svg) {
  std::map<std::string, size_t> points;
  for (const auto* p : svg.find_all("path")) points[p->children[0].text] = points_in(p->attributes.at("d"));
  return points;
}
std::vector<std::string> texts_of(const XmlElement& svg) {
  std::vector<std::string> texts;
  for (const auto* e : svg.find_all("text")) texts.push_back(e->text);
  return texts;
}
bool has_text(const XmlElement& svg, const std::string& text) {
  const auto texts = texts_of(svg);
  return std::find(texts.begin(), texts.end(), text) != texts.end();
}

// A metrics file of `steps` step records and an eval every `every` steps (none when 0).
std::string metrics_text(int steps, int every, double loss0 = 5.5) {
  std::string t =
      R"({"event":"setup","world_size":2,"stage":2,"dtype":"bf16","num_params":10,"padded_params":16,"memory":[]})"
      "\n";
  for (int s = 1; s <= steps; ++s) {
    t += "{\"event\":\"step\",\"step\":" + std::to_string(s) + ",\"loss\":" + std::to_string(loss0 - 0.01 * s) +
         ",\"lr\":0.0003,\"grad_norm\":" + std::to_string(1.0 + 1.0 / s) +
         ",\"loss_scale\":1,\"skipped\":false,\"tokens\":1024,\"step_ms\":3.5,\"tokens_per_s\":" +
         std::to_string(200000 + s) + ",\"mfu\":0.4,\"comm\":{\"all_reduce\":8}}\n";
    if (every > 0 && s % every == 0)
      t += "{\"event\":\"eval\",\"step\":" + std::to_string(s) + ",\"val_loss\":" + std::to_string(loss0 - 0.011 * s) +
           "}\n";
  }
  t += R"({"event":"summary","steps":)" + std::to_string(steps) + R"(,"interrupted":false})" "\n";
  return t;
}

std::string error_of(const std::vector<std::string>& files, const std::string& out) {
  try {
    plot_metrics_files(files, out);
  } catch (const zt::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("ticks are round values that cover the data") {
  struct Case {
    double lo, hi;
  };
  for (Case c : {Case{0.3, 4.7}, {1, 300}, {2.71, 5.55}, {1e-5, 3e-4}, {0, 0}, {42, 42}, {-3, 7}, {123456, 987654},
                 {0.0001, 0.0001}}) {
    INFO(c.lo << " .. " << c.hi);
    Ticks t = nice_ticks(c.lo, c.hi);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step)));
    CHECK((std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9));
    CHECK(t.lo <= c.lo);
    CHECK(t.hi >= c.hi);
    CHECK(t.values.size() >= 3);
    CHECK(t.values.size() <= 12);
    for (double v : t.values) CHECK(std::abs(v / t.step - std::round(v / t.step)) < 1e-6);
    if (c.lo < 0 && c.hi > 0) CHECK(std::find(t.values.begin(), t.values.end(), 0.0) != t.values.end());
  }
  CHECK(nice_ticks(1, 300).values == std::vector<double>{0, 50, 100, 150, 200, 250, 300});
}

TEST_CASE("tick labels: as many decimals as the step needs, k and M, one power of ten for small values") {
  CHECK(tick_labels(nice_ticks(1, 300)) == std::vector<std::string>{"0", "50", "100", "150", "200", "250", "300"});
  CHECK(tick_labels(nice_ticks(2.7, 5.5)) == std::vector<std::string>{"2.5", "3.0", "3.5", "4.0", "4.5", "5.0", "5.5"});
  CHECK(tick_labels(nice_ticks(0, 250000)) == std::vector<std::string>{"0", "50k", "100k", "150k", "200k", "250k"});
  CHECK(tick_labels(nice_ticks(0, 3e-4)) == std::vector<std::string>{"0", "0.5e-4", "1.0e-4", "1.5e-4", "2.0e-4",
                                                                        "2.5e-4", "3.0e-4"});
  CHECK(tick_labels(nice_ticks(-1, 1)).front() == "-1.0");
}

TEST_CASE("the SVG is well-formed XML with one path per series and one point per record") {
  const auto a = write("zero1.jsonl", metrics_text(40, 10));
  const auto b = write("zero3.jsonl", metrics_text(25, 0, 5.0));  // no evaluations
  const auto out = scratch("curves.svg");
  plot_metrics_files({a, b}, out);
  const XmlElement svg = parse_xml(read(out));
  CHECK(svg.name == "svg");
  CHECK(svg.attributes.at("xmlns") == "http://www.w3.org/2000/svg");

  // zero1: train loss, val loss, lr, grad norm, throughput; zero3 the same without val loss.
  const auto paths = svg.find_all("path");
  REQUIRE(paths.size() == 9);
  std::map<std::string, size_t> points;
  for (const auto* p : paths) {
    REQUIRE(p->children.size() == 1);  // <title>: which run and which series
    points[p->children[0].text] = points_in(p->attributes.at("d"));
  }
  CHECK(points == std::map<std::string, size_t>{{"zero1: train loss", 40},
                                                 {"zero1: val loss", 4},
                                                 {"zero1: learning rate", 40},
                                                 {"zero1: gradient norm", 40},
                                                 {"zero1: tokens/s", 40},
                                                 {"zero3: train loss", 25},
                                                 {"zero3: learning rate", 25},
                                                 {"zero3: gradient norm", 25},
                                                 {"zero3: tokens/s", 25}});
  // The two runs have their own colours; the legend names them; the charts have titles and axis labels.
  std::map<std::string, std::string> stroke;
  for (const auto* p : paths) stroke[p->children[0].text] = p->attributes.at("stroke");
  CHECK(stroke["zero1: train loss"] != stroke["zero3: train loss"]);
  CHECK(stroke["zero1: train loss"] == stroke["zero1: val loss"]);
  CHECK(stroke["zero1: train loss"] == stroke["zero1: tokens/s"]);
  const std::vector<std::string> texts = texts_of(svg);
  for (const char* expected : {"zero1", "zero3", "loss", "learning rate", "gradient norm", "throughput", "step",
                               "train", "val (eval)", "tokens/s (all ranks)"})
    CHECK(std::find(texts.begin(), texts.end(), expected) != texts.end());
  // Round tick values on the step axis of 40 steps.
  for (const char* tick : {"0", "10", "20", "30", "40"})
    CHECK(std::find(texts.begin(), texts.end(), tick) != texts.end());
}

TEST_CASE("a null value breaks the line: the points are the values present") {
  std::string text = metrics_text(10, 0);
  const std::string step5 = "\"step\":5,\"loss\":";
  auto at = text.find(step5);
  REQUIRE(at != std::string::npos);
  auto end = text.find(',', at + step5.size());
  text.replace(at + step5.size(), end - at - step5.size(), "null");
  RunCurves c = read_run_curves(write("gap.jsonl", text));
  REQUIRE(c.loss.size() == 10);
  CHECK(std::isnan(c.loss[4].y));
  const XmlElement svg = parse_xml(curves_svg({c}));
  for (const auto* p : svg.find_all("path"))
    if (p->children[0].text == "gap: train loss") {
      const std::string d = p->attributes.at("d");
      CHECK(points_in(d) == 9);
      CHECK(std::count(d.begin(), d.end(), 'M') == 2);  // a new line after the gap
    }
}

TEST_CASE("names that need escaping stay readable and the XML well-formed") {
  const auto f = write("a&b<c>\"d'.jsonl", metrics_text(3, 0));
  const auto out = scratch("escaped.svg");
  plot_metrics_files({f}, out);
  const XmlElement svg = parse_xml(read(out));
  CHECK(has_text(svg, "a&b<c>\"d'"));
}

TEST_CASE("two runs of the same file name are told apart by their paths") {
  std::filesystem::create_directories(scratch("x"));
  std::filesystem::create_directories(scratch("y"));
  const auto a = write("x/metrics.jsonl", metrics_text(3, 0)), b = write("y/metrics.jsonl", metrics_text(3, 0));
  const XmlElement svg = parse_xml(curves_svg({read_run_curves(a), read_run_curves(b)}));
  CHECK(has_text(svg, a));
  CHECK(has_text(svg, b));
}

TEST_CASE("bad input: one error naming the file, and the line where there is one") {
  const auto good = write("good.jsonl", metrics_text(5, 0));
  const auto out = scratch("bad.svg");

  CHECK_THAT(error_of({good, scratch("missing.jsonl")}, out),
             Catch::StartsWith(scratch("missing.jsonl") + ": cannot open: No such file or directory"));
  CHECK_FALSE(std::filesystem::exists(out));  // nothing written when an input is bad

  std::string text = metrics_text(5, 0);
  auto third = text.find('\n', text.find('\n') + 1) + 1;  // the start of line 3
  text.insert(third, "{\"event\":\"step\",\"step\":3,\"loss\":4.1\n");  // cut short
  CHECK_THAT(error_of({write("cut.jsonl", text)}, out),
             Catch::StartsWith(scratch("cut.jsonl") + ":3: not a JSON record (") &&
                 Catch::Contains("column"));
  CHECK_THAT(error_of({write("words.jsonl", "hello world\n")}, out),
             Catch::StartsWith(scratch("words.jsonl") + ":1: not a JSON record"));
  CHECK_THAT(error_of({write("array.jsonl", metrics_text(2, 0) + "[1, 2]\n")}, out),
             Catch::StartsWith(scratch("array.jsonl") + ":5: expected a metrics record"));
  CHECK_THAT(error_of({write("noloss.jsonl", "{\"event\":\"step\",\"step\":1}\n")}, out),
             Catch::Equals(scratch("noloss.jsonl") + ":1: step record without \"loss\""));
  CHECK_THAT(error_of({write("text.jsonl", "{\"event\":\"step\",\"step\":1,\"loss\":\"low\"}\n")}, out),
             Catch::Contains(":1: \"loss\" is \"low\", expected a number"));
  CHECK_THAT(error_of({write("empty.jsonl", "")}, out), Catch::Contains("empty.jsonl: no step records"));
  CHECK_THAT(error_of({scratch("")}, out), Catch::Contains("is a directory"));
  // The output is never one of the inputs.
  CHECK_THAT(error_of({good}, good), Catch::Contains("is one of the metrics files read"));
  CHECK(read(good) == metrics_text(5, 0));
  CHECK_THAT(error_of({good}, scratch("no/such/dir/x.svg")), Catch::Contains("cannot open for writing"));
}

TEST_CASE("the README's curves (docs/quickstart-curves.svg) are a well-formed SVG of one run's five series") {
  const XmlElement svg = parse_xml(read(std::string(ZT_SOURCE_DIR) + "/docs/quickstart-curves.svg"));
  std::vector<std::string> series;
  for (const auto* p : svg.find_all("path")) series.push_back(p->children.at(0).text);
  std::sort(series.begin(), series.end());
  CHECK(series == std::vector<std::string>{"run: gradient norm", "run: learning rate", "run: tokens/s",
                                           "run: train loss", "run: val loss"});
}

TEST_CASE("preference training's rewards: accuracy and margin charts, train and val, one point per record") {
  // A DPO run's records: the rewards' means in every step and eval record (docs/metrics.md).
  std::string t;
  for (int s = 1; s <= 6; ++s) {
    const std::string rewards = ",\"rewards/chosen\":0.1,\"rewards/rejected\":-0.1,\"rewards/accuracies\":" +
                                std::to_string(0.5 + 0.05 * s) + ",\"rewards/margins\":" + std::to_string(0.1 * s) +
                                ",\"logps/chosen\":-20.5,\"logps/rejected\":-24.0";
    t += "{\"event\":\"step\",\"step\":" + std::to_string(s) + ",\"loss\":0.69" + rewards +
         ",\"lr\":1e-6,\"grad_norm\":1.5,\"tokens\":512,\"tokens_per_s\":900}\n";
    if (s % 3 == 0) t += "{\"event\":\"eval\",\"step\":" + std::to_string(s) + ",\"val_loss\":0.68" + rewards + "}\n";
  }
  const auto dpo = write("dpo.jsonl", t), sft = write("sft.jsonl", metrics_text(6, 3));
  const auto out = scratch("dpo.svg");
  plot_metrics_files({dpo, sft}, out);
  const XmlElement svg = parse_xml(read(out));
  const auto points = series_points(svg);
  CHECK(points.at("dpo: train rewards/accuracies") == 6);
  CHECK(points.at("dpo: val rewards/accuracies") == 2);
  CHECK(points.at("dpo: train rewards/margins") == 6);
  CHECK(points.at("dpo: val rewards/margins") == 2);
  CHECK(points.count("sft: train rewards/accuracies") == 0);  // a run without them draws none
  for (const char* title : {"preference accuracy", "reward margin"}) CHECK(has_text(svg, title));
  CHECK(!has_text(svg, "ORPO log odds ratio"));  // DPO has none
  // Without preference metrics, the two rows of four charts only.
  plot_metrics_files({sft}, out);
  CHECK(!has_text(parse_xml(read(out)), "preference accuracy"));
}

TEST_CASE("ORPO's nll_loss and log_odds_ratio: a fourth row of charts, train and val") {
  std::string t;
  for (int s = 1; s <= 4; ++s) {
    const std::string metrics = ",\"rewards/chosen\":-0.6,\"rewards/rejected\":-0.7,\"rewards/accuracies\":0.75,"
                                "\"rewards/margins\":0.1,\"logps/chosen\":-6.0,\"logps/rejected\":-7.0,"
                                "\"nll_loss\":" + std::to_string(6.0 - 0.1 * s) + ",\"log_odds_ratio\":-0.6,"
                                "\"log_odds_chosen\":0.3";
    t += "{\"event\":\"step\",\"step\":" + std::to_string(s) + ",\"loss\":6.1" + metrics +
         ",\"lr\":1e-6,\"grad_norm\":1.5,\"tokens\":512,\"tokens_per_s\":900}\n";
    if (s % 2 == 0) t += "{\"event\":\"eval\",\"step\":" + std::to_string(s) + ",\"val_loss\":6.2" + metrics + "}\n";
  }
  const auto orpo = write("orpo.jsonl", t);
  const auto out = scratch("orpo.svg");
  plot_metrics_files({orpo}, out);
  const XmlElement svg = parse_xml(read(out));
  const auto points = series_points(svg);
  CHECK(points.at("orpo: train nll_loss") == 4);
  CHECK(points.at("orpo: val nll_loss") == 2);
  CHECK(points.at("orpo: train log_odds_ratio") == 4);
  CHECK(points.at("orpo: val log_odds_ratio") == 2);
  CHECK(points.at("orpo: train rewards/accuracies") == 4);
  for (const char* title : {"ORPO NLL of the chosen", "ORPO log odds ratio", "preference accuracy"})
    CHECK(has_text(svg, title));
}
