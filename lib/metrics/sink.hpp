#pragma once
// Where a run's records go: the metrics file, DeepSpeed's monitors, the console. Each sink takes
// what it shows from the records and ignores the rest; the trainer hands every record to one
// fan-out list and knows none of them.
#include <cstdint>
#include <memory>
#include <vector>

#include "metrics/records.hpp"

namespace zt {

class MetricsSink {
public:
  virtual ~MetricsSink() = default;
  virtual void setup(const SetupRecord&) {}
  virtual void step(const StepRecord&) {}
  virtual void eval(const EvalRecord&) {}
  virtual void sample(const SampleRecord&) {}
  virtual void summary(const SummaryRecord&) {}
};

// Every record to every sink, in the order the sinks were added (the console's lines come out in
// that order).
class MetricsSinks final : public MetricsSink {
public:
  void add(std::unique_ptr<MetricsSink> sink) { sinks_.push_back(std::move(sink)); }
  void setup(const SetupRecord& r) override {
    for (auto& s : sinks_) s->setup(r);
  }
  void step(const StepRecord& r) override {
    for (auto& s : sinks_) s->step(r);
  }
  void eval(const EvalRecord& r) override {
    for (auto& s : sinks_) s->eval(r);
  }
  void sample(const SampleRecord& r) override {
    for (auto& s : sinks_) s->sample(r);
  }
  void summary(const SummaryRecord& r) override {
    for (auto& s : sinks_) s->summary(r);
  }

private:
  std::vector<std::unique_ptr<MetricsSink>> sinks_;
};

}  // namespace zt
