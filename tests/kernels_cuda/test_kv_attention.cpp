// Attention against a key/value cache (generation) against kernels/cpu's: the cache rows the new
// tokens write and the outputs, for a prompt (pos 0), one token and a few tokens at an offset, a
// cache longer than one tile of keys, grouped-query, multi-query and GPT-2's multi-head shapes,
// head sizes 16 to 256, fp32 and bf16, sliding windows, rings of a window's rows that wrap; the
// same inputs give the same bits twice.
#include "cuda_test_support.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cuda/kv_attention.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int B, T, pos, S, NH, NKV, hd;
  int window = 0;
};

std::vector<Shape> shapes() {
  std::vector<Shape> s{
      {2, 5, 0, 12, 4, 2, 16},         // a prompt into an empty cache, grouped-query
      {2, 1, 5, 12, 4, 2, 16},         // one token after it
      {1, 3, 6, 12, 3, 3, 24},         // GPT-2's multi-head attention, a few tokens at an offset
      {1, 2, 150, 160, 2, 1, 8},       // multi-query over more than one tile of keys
      {1, 1, 3, 8, 1, 1, 256},         // the largest head
      {2, 5, 0, 12, 4, 2, 16, 3},      // a prompt in a window of 3
      {1, 2, 150, 160, 2, 1, 8, 130},  // a window over more than one tile of keys, from inside one
      {1, 3, 6, 12, 3, 3, 24, 1},      // a window of the query alone
      // Sliding layers' rings of the window's rows (position p at row p % S):
      {2, 5, 0, 3, 4, 2, 16, 3},       // a prompt longer than the ring
      {2, 1, 7, 3, 4, 2, 16, 3},       // one token after the ring has wrapped
      {1, 2, 150, 130, 2, 1, 8, 130},  // a window over more than one tile of keys, wrapped
      {1, 3, 6, 1, 3, 3, 24, 1},       // a ring of one row
  };
  if (!kEmulated) s.push_back({4, 1, 2000, 2048, 32, 8, 128});  // Llama 3 8B's heads deep into a cache
  return s;
}

struct Result {
  Vec out, k, v;
  Bytes out_bits;
};

Result run_gpu(DType dt, Shape s, const Vec& qkv, const Vec& k0, const Vec& v0) {
  DeviceTensor dqkv(dt, qkv), dk(dt, k0), dv(dt, v0), dout(dt, size_t(s.B) * s.T * s.NH * s.hd);
  cuda::attention_cached_forward(dt, dout.ptr(), dk.ptr(), dv.ptr(), dqkv.ptr(), s.B, s.T, s.pos, s.S, s.NH, s.NKV,
                                 s.hd, s.window, nullptr);
  device_sync();
  return {dout.values(), dk.values(), dv.values(), dout.bits()};
}

}  // namespace

TEST_CASE("attention against a KV cache matches the CPU", "[cuda][attention][kv_cache]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes()) {
      INFO(dtype_name(dt) << " B=" << s.B << " T=" << s.T << " pos=" << s.pos << " S=" << s.S << " NH=" << s.NH
                          << " NKV=" << s.NKV << " hd=" << s.hd << " window=" << s.window);
      const size_t cache = size_t(s.B) * s.S * s.NKV * s.hd;
      const Vec qkv = rounded(dt, random_vec(size_t(s.B) * s.T * (s.NH + 2 * s.NKV) * s.hd, 71, 1.5f));
      // The rows hold earlier tokens' keys and values; those the new tokens do not reach must stay as they are.
      const Vec k0 = rounded(dt, random_vec(cache, 72, 1.5f)), v0 = rounded(dt, random_vec(cache, 73));

      Vec want(size_t(s.B) * s.T * s.NH * s.hd), k_want = k0, v_want = v0;
      cpu::gqa_attention_cached_forward(want.data(), k_want.data(), v_want.data(), qkv.data(), s.B, s.T, s.pos, s.S,
                                        s.NH, s.NKV, s.hd, s.window);
      const Result got = run_gpu(dt, s, qkv, k0, v0);
      CHECK(got.k == k_want);  // copies: exact
      CHECK(got.v == v_want);
      require_close(dt, got.out, want, {1e-2});
      CHECK(run_gpu(dt, s, qkv, k0, v0).out_bits == got.out_bits);
    }
}

TEST_CASE("attention against a KV cache refuses a shape it cannot compute", "[cuda][attention][kv_cache]") {
  DeviceBuffer buf(4096);
  auto call = [&](int T, int pos, int S, int NH, int NKV, int hd) {
    cuda::attention_cached_forward(DType::F32, buf.get(), buf.get(), buf.get(), buf.get(), 1, T, pos, S, NH, NKV, hd,
                                   0, nullptr);
  };
  CHECK_THROWS_WITH(call(1, 9, 8, 2, 1, 8), Catch::Contains("S >= pos"));
  CHECK_THROWS_WITH(call(1, 0, 8, 3, 2, 8), Catch::Contains("NKV dividing NH"));
  CHECK_THROWS_WITH(call(1, 0, 8, 1, 1, 512), Catch::Contains("hd in [1, 256]"));
}
