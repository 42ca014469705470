#include "data/data_sampler.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/error.hpp"
#include "data/sample_sampler.hpp"
#include "data/sampler.hpp"

namespace zt {

double SamplerState::epochs() const {
  if (unit == "rows") return num_rows > 0 ? double(next_row) / double(num_rows) : 0.0;
  return num_windows > 0 ? double(next_window) / double(num_windows) : 0.0;
}

nlohmann::json sampler_state_to_json(const SamplerState& s) {
  nlohmann::json files = nlohmann::json::array();
  for (const DataFile& f : s.files) files.push_back({{"path", f.path}, {"tokens", f.tokens}});
  nlohmann::json j = {{"seed", s.seed}, {"shuffle", s.shuffle}, {"next_step", s.next_step}};
  if (s.unit == "rows") {  // windows, the older unit, are written as before samples came
    j.update({{"unit", s.unit}, {"num_rows", s.num_rows}, {"rows_per_step", s.rows_per_step}, {"next_row", s.next_row},
              {"layout", s.layout}});
  } else {
    j.update({{"window_tokens", s.window_tokens},
              {"num_windows", s.num_windows},
              {"windows_per_step", s.windows_per_step},
              {"next_window", s.next_window}});
  }
  j["files"] = files;
  return j;
}

SamplerState sampler_state_from_json(const nlohmann::json& j) {
  auto get = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key)) fail("data sampler state: missing key \"{}\"", key);
    return j.at(key);
  };
  SamplerState s;
  try {
    s.seed = get("seed").get<uint64_t>();
    s.shuffle = get("shuffle").get<bool>();
    s.next_step = get("next_step").get<int64_t>();
    s.unit = j.value("unit", std::string("windows"));  // checkpoints from before samples: windows
    if (s.unit == "rows") {
      s.num_rows = get("num_rows").get<int64_t>();
      s.rows_per_step = get("rows_per_step").get<int64_t>();
      s.next_row = get("next_row").get<int64_t>();
      s.layout = get("layout").get<std::string>();
    } else if (s.unit == "windows") {
      s.window_tokens = get("window_tokens").get<int64_t>();
      s.num_windows = get("num_windows").get<int64_t>();
      s.windows_per_step = get("windows_per_step").get<int64_t>();
      // Checkpoints from before the position was saved: the step's first window in their order.
      s.next_window =
          j.contains("next_window") ? j.at("next_window").get<int64_t>() : s.next_step * s.windows_per_step;
    } else {
      fail("data sampler state: unit \"{}\" (expected windows or rows)", s.unit);
    }
    if (j.contains("files"))
      for (const auto& f : j.at("files")) s.files.push_back({f.at("path").get<std::string>(), f.at("tokens").get<int64_t>()});
  } catch (const nlohmann::json::exception& e) {
    fail("data sampler state: {}", e.what());
  }
  return s;
}

namespace {

// "a.bin (100 tokens), b.bin (50 tokens)"
std::string describe_files(const std::vector<DataFile>& files) {
  std::string text;
  for (const DataFile& f : files) text += fmt::format("{}{} ({} tokens)", text.empty() ? "" : ", ", f.path, f.tokens);
  return text;
}

// The same files in the same order, wherever they lie now.
bool same_files(const std::vector<DataFile>& a, const std::vector<DataFile>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].tokens != b[i].tokens ||
        std::filesystem::path(a[i].path).filename() != std::filesystem::path(b[i].path).filename())
      return false;
  return true;
}

}  // namespace

void warn_if_files_changed(const SamplerState& saved, const std::vector<DataFile>& files,
                           const std::string& continues_at) {
  if (!saved.files.empty() && !same_files(saved.files, files))
    spdlog::warn("data files changed since the checkpoint ({} -> {}): training continues at {} of the new stream",
                 describe_files(saved.files), describe_files(files), continues_at);
}

std::unique_ptr<DataSampler> make_sampler(const TokenDataset& data, const RowOptions& options, int batch,
                                          int world_size, int rank, int grad_accum, bool shuffle, uint64_t seed) {
  if (data.has_pairs() && options.packing != Packing::None)
    fail("{}: preference pairs are read one sequence to a row, chosen and rejected side by side in one micro-batch: "
         "data.packing {} does not apply to them (expected none)",
         data.path(), packing_name(options.packing));
  if (data.has_samples() && options.packing != Packing::Windows)
    return std::make_unique<SampleSampler>(data, options, batch, world_size, rank, grad_accum, shuffle, seed);
  return std::make_unique<BatchSampler>(data, batch, options.seq_len, world_size, rank, grad_accum, shuffle, seed);
}

}  // namespace zt
