#include "config/schedule_kwargs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace zt::config {

namespace {

const std::map<std::string, std::vector<std::string>>& kwargs_of_schedules() {
  static const std::map<std::string, std::vector<std::string>> kwargs = {
      {"cosine", {"num_cycles"}},
      {"cosine_with_restarts", {"num_cycles"}},
      {"cosine_with_min_lr", {"num_cycles", "min_lr", "min_lr_rate"}},
      {"polynomial", {"lr_end", "power"}},
  };
  return kwargs;
}

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace

nlohmann::json read_schedule_kwargs(Block& training, const std::string& type) {
  Block k = training.child("lr_scheduler_kwargs", UnknownKeys::Error);
  nlohmann::json given = nlohmann::json::object();
  const auto it = kwargs_of_schedules().find(type);
  const std::vector<std::string> own = it == kwargs_of_schedules().end() ? std::vector<std::string>{} : it->second;
  auto take = [&](const std::string& key, auto read) {
    if (std::find(own.begin(), own.end(), key) == own.end()) return;
    if (read()) given[key] = *k.raw(key);  // as written: 2 stays 2
  };
  take("num_cycles", [&] { return k.optional_number("num_cycles", NumberRange::non_negative()); });
  take("min_lr", [&] { return k.optional_number("min_lr", NumberRange::non_negative()); });
  take("min_lr_rate", [&] { return k.optional_number("min_lr_rate", NumberRange::unit()); });
  take("lr_end", [&] { return k.optional_number("lr_end", NumberRange::non_negative()); });
  take("power", [&] { return k.optional_number("power", NumberRange::positive()); });
  std::set<std::string> others;
  for (const auto& [schedule, keys] : kwargs_of_schedules())
    for (const auto& key : keys)
      if (std::find(own.begin(), own.end(), key) == own.end()) others.insert(key);
  for (const auto& key : others)
    k.forbid(key, fmt::format("not a parameter of lr_scheduler_type {} (it takes {})", type,
                              own.empty() ? "none" : listed(own)));
  k.finish();
  if (given.contains("min_lr") && given.contains("min_lr_rate"))
    k.fail("min_lr", "given together with min_lr_rate (expected one of them, as transformers)");
  if (type == "cosine_with_min_lr" && !given.contains("min_lr") && !given.contains("min_lr_rate"))
    training.fail("lr_scheduler_kwargs", fmt::format("cosine_with_min_lr needs {} (e.g. {{\"min_lr_rate\": 0.1}}, "
                                                     "as transformers' get_scheduler)",
                                                     listed({"min_lr", "min_lr_rate"})));
  return given;
}

void apply_schedule_kwargs(const nlohmann::json& kwargs, double peak_lr, LrScheduleConfig& s, const Diagnostics& diag) {
  s.num_cycles = kwargs.value("num_cycles", s.type == "cosine_with_restarts" ? 1.0 : 0.5);
  s.min_lr_rate =
      kwargs.contains("min_lr") ? kwargs["min_lr"].get<double>() / peak_lr : kwargs.value("min_lr_rate", 0.0);
  s.lr_end = kwargs.value("lr_end", 1e-7);
  s.power = kwargs.value("power", 1.0);
  if (s.type == "polynomial" && !(s.lr_end < peak_lr))
    diag.fail("training.lr_scheduler_kwargs.lr_end",
              fmt::format("{:g} is not below the peak learning rate {:g} (expected lr_end < lr, as transformers)",
                          s.lr_end, peak_lr));
}

}  // namespace zt::config
