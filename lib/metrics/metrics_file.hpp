#pragma once
// The metrics file (docs/metrics.md): JSON Lines written by rank 0, floats with 9 significant
// digits so fp32 values round-trip and runs can be compared bit for bit.
#include <string>

#include "core/checked_file.hpp"
#include "metrics/sink.hpp"

namespace zt {

// Every line is written whole and flushed to the file at once. A line that cannot be written (a
// full disk) is reported to OutputFailure, and the file ends with the last whole line.
class MetricsWriter final : public MetricsSink {
public:
  MetricsWriter() = default;  // writes nothing (ranks other than 0, or no metrics path)
  // Throws zt::Error naming training.metrics. append: a resumed run continues the file of the run it
  // resumes (a new setup line, then its steps).
  explicit MetricsWriter(const std::string& path, bool append = false);
  void setup(const SetupRecord& r) override;
  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;
  void summary(const SummaryRecord& r) override;

private:
  void write(const std::string& line);
  CheckedFile out_;
};

std::string format_float(double x);  // 9 significant digits; null for nan/inf (valid JSON)

}  // namespace zt
