#include <catch2/catch.hpp>

#include "core/buffer.hpp"
#include "core/ledger.hpp"

using namespace zt;

TEST_CASE("buffers register their bytes by category, with peaks", "[ledger]") {
  auto& ledger = MemoryLedger::instance();
  auto before = ledger.stats();
  {
    Buffer<float> p(MemCategory::Params, 1000);
    Buffer<uint16_t> g(MemCategory::Grads, 300);
    auto s = ledger.stats();
    CHECK(s.cur(MemCategory::Params) - before.cur(MemCategory::Params) == 4000);
    CHECK(s.cur(MemCategory::Grads) - before.cur(MemCategory::Grads) == 600);
    CHECK(p[999] == 0.0f);  // zero-initialised
    Buffer<float> moved = std::move(p);
    CHECK(ledger.stats().cur(MemCategory::Params) - before.cur(MemCategory::Params) == 4000);
    CHECK(p.size() == 0);
  }
  auto after = ledger.stats();
  CHECK(after.cur(MemCategory::Params) == before.cur(MemCategory::Params));
  CHECK(after.cur(MemCategory::Grads) == before.cur(MemCategory::Grads));
  CHECK(after.pk(MemCategory::Params) >= before.cur(MemCategory::Params) + 4000);
  ledger.reset_peaks();
  CHECK(ledger.stats().pk(MemCategory::Params) == after.cur(MemCategory::Params));
}

TEST_CASE("an allocation that cannot be made names its size and category, and changes nothing", "[ledger]") {
  const auto before = MemoryLedger::instance().stats();
  // 2^60 floats (4 EiB): no machine has it; 2^62 floats: the byte count itself overflows.
  CHECK_THROWS_WITH(Buffer<float>(MemCategory::Activations, size_t(1) << 60),
                    Catch::StartsWith("out of memory: cannot allocate 4398046511104.0 MiB for activations"));
  CHECK_THROWS_WITH(Buffer<float>(MemCategory::Grads, size_t(1) << 62),
                    Catch::StartsWith("out of memory: cannot allocate") && Catch::Contains("for grads"));
  const auto after = MemoryLedger::instance().stats();
  CHECK(after.current == before.current);
}

TEST_CASE("a space's limit refuses the allocation that would pass it, naming who set it; other spaces are free",
          "[ledger]") {
  auto& ledger = MemoryLedger::instance();
  const size_t held = ledger.held(MemSpace::Device);
  ledger.set_limit(MemSpace::Device, held + 1000 * sizeof(float), "training.device_memory_limit");
  {
    Buffer<float> a(cpu_device(), MemSpace::Device, MemCategory::Params, 600);
    CHECK(ledger.held(MemSpace::Device) == held + 2400);
    Buffer<float> b(cpu_device(), MemSpace::Device, MemCategory::Grads, 400);  // exactly at the limit
    CHECK_THROWS_WITH(Buffer<float>(cpu_device(), MemSpace::Device, MemCategory::Buffers, 1),
                      Catch::StartsWith("out of memory: cannot allocate 0.0 MiB for buffers") &&
                          Catch::Contains("in device memory, whose limit is") &&
                          Catch::Contains("(training.device_memory_limit)"));
    CHECK(ledger.held(MemSpace::Device) == held + 4000);  // the refused one left no trace
    Buffer<float> host(cpu_device(), MemSpace::Host, MemCategory::Optimizer, 100000);  // not limited
    b.reset();
    Buffer<float> c(cpu_device(), MemSpace::Device, MemCategory::Buffers, 400);  // room again
  }
  ledger.set_limit(MemSpace::Device, 0, "");
  Buffer<float> big(cpu_device(), MemSpace::Device, MemCategory::Activations, 100000);
  CHECK(ledger.held(MemSpace::Device) == held + 400000);
}
