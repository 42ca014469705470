#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "../data/temp_dir.hpp"
#include "ckpt/safetensors.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

using namespace zt;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A safetensors file assembled by hand: length prefix, header text as given, data bytes.
std::string raw_file(const TempDir& dir, const std::string& name, const std::string& header,
                     const std::string& data, int64_t length_override = -1) {
  uint64_t length = length_override < 0 ? header.size() : uint64_t(length_override);
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &length, 8);
  return dir.write(name, bytes + header + data);
}

std::string float_bytes(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

}  // namespace

TEST_CASE("safetensors round trip of F32, BF16 and F16 with metadata", "[safetensors]") {
  TempDir dir;
  std::vector<float> a = {1.5f, -2.f, 3.25f, 0.f, 1e-3f, 7.f};
  std::vector<uint16_t> b(4), c(3);
  std::vector<float> b_src = {0.5f, -1.f, 256.f, 3.f}, c_src = {0.25f, -65504.f, 1.f};
  from_f32(DType::BF16, b_src.data(), b.data(), 4);
  from_f32(DType::F16, c_src.data(), c.data(), 3);
  const std::string path = dir.file("t.safetensors");
  write_safetensors(path, {{"a", DType::F32, {2, 3}, a.data()}, {"b", DType::BF16, {4}, b.data()},
                           {"c", DType::F16, {3, 1}, c.data()}},
                    {{"format", "pt"}, {"note", "x"}});
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  SafetensorsReader r(path);
  CHECK(r.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "x"}});
  REQUIRE(r.tensors().size() == 3);
  CHECK(r.data_start() % 8 == 0);
  const SafetensorsEntry* ea = r.find("a");
  REQUIRE(ea);
  CHECK(ea->dtype == "F32");
  CHECK(ea->shape == std::vector<uint64_t>{2, 3});
  CHECK(ea->end - ea->begin == 24);
  CHECK(r.find("c")->shape == std::vector<uint64_t>{3, 1});
  CHECK(r.find("zzz") == nullptr);
  std::vector<float> out(6);
  r.read_f32("a", out.data());
  CHECK(out == a);
  r.read_f32("b", out.data());
  CHECK(std::vector<float>(out.begin(), out.begin() + 4) == b_src);
  r.read_f32("c", out.data());
  CHECK(std::vector<float>(out.begin(), out.begin() + 3) == c_src);
  CHECK_THROWS_WITH(r.read_f32("nope", out.data()), Catch::Contains("nope"));
  CHECK(std::filesystem::file_size(path) == r.data_start() + 24 + 8 + 6);
}

TEST_CASE("safetensors writer output, byte for byte", "[safetensors]") {
  TempDir dir;
  float a[2] = {1.f, 2.f};
  uint16_t b[2] = {0x3c00, 0xc000};  // F16 1.0, -2.0
  const std::string path = dir.file("exact.safetensors");
  // Written by decreasing element size then name: a (F32) first although given second.
  write_safetensors(path, {{"b", DType::F16, {1, 2}, b}, {"a", DType::F32, {2}, a}}, {{"format", "pt"}});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string expected(8, '\0');
  uint64_t length = header.size();
  std::memcpy(expected.data(), &length, 8);
  expected += header;
  expected.append(reinterpret_cast<const char*>(a), 8);
  expected.append(reinterpret_cast<const char*>(b), 4);
  CHECK(slurp(path) == expected);
  CHECK(header.size() % 8 == 0);
}

TEST_CASE("safetensors reader parses a hand-made file exactly", "[safetensors]") {
  TempDir dir;
  std::string header =
      R"({"x":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  SafetensorsReader r(raw_file(dir, "hand.safetensors", header, float_bytes({5.f, -9.f})));
  CHECK(r.header_length() == header.size());
  CHECK(r.data_start() == 8 + header.size());
  REQUIRE(r.tensors().size() == 2);
  CHECK(r.tensors()[0].name == "w");  // in data order
  CHECK(r.tensors()[1].name == "x");
  CHECK(r.tensors()[1].shape.empty());  // a scalar
  CHECK(r.tensors()[1].numel() == 1);
  float v = 0;
  r.read_f32("x", &v);
  CHECK(v == -9.f);
  CHECK(r.metadata().empty());
}

TEST_CASE("safetensors corruptions each give their own error", "[safetensors]") {
  TempDir dir;
  const std::string good = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data = float_bytes({1.f, 2.f});
  auto err = [&](const std::string& name, const std::string& header, const std::string& bytes, int64_t length = -1) {
    try {
      SafetensorsReader r(raw_file(dir, name, header, bytes, length));
    } catch (const zt::Error& e) {
      std::string what = e.what();
      CHECK(what.find(name) != std::string::npos);  // every message names the file
      return what;
    }
    return std::string("no error");
  };
  CHECK_NOTHROW(SafetensorsReader(raw_file(dir, "good.st", good, data)));
  CHECK_THAT(err("truncated.st", good, data.substr(0, 5)),
             Catch::Contains("\"w\"") && Catch::Contains("[0, 8]") && Catch::Contains("data section of 5 bytes"));
  CHECK_THAT(err("long_length.st", good, data, 100000), Catch::Contains("bad header length 100000"));
  CHECK_THAT(err("tiny.st", "", "", 0).substr(0), Catch::Contains("bad header length 0"));
  {
    std::string path = dir.write("five_bytes.st", "abcde");
    CHECK_THROWS_WITH(SafetensorsReader(path), Catch::Contains("five_bytes.st") && Catch::Contains("too small"));
  }
  CHECK_THAT(err("not_json.st", R"({"w":{"dtype":"F32",)", ""), Catch::Contains("not valid JSON"));
  CHECK_THAT(err("not_object.st", R"([1, 2])", ""), Catch::Contains("does not start with"));
  CHECK_THAT(err("reversed.st", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data),
             Catch::Contains("\"w\"") && Catch::Contains("[8, 0]"));
  const std::string overlapping = R"({"u":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_THAT(err("overlap.st", overlapping, data),
             Catch::Contains("\"u\"") && Catch::Contains("\"v\"") && Catch::Contains("overlap"));
  CHECK_THAT(err("dtype.st", R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data),
             Catch::Contains("\"w\"") && Catch::Contains("unknown dtype \"F33\""));
  CHECK_THAT(err("shape.st", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
             Catch::Contains("\"w\"") && Catch::Contains("[3]") && Catch::Contains("needs 12 bytes"));
  CHECK_THAT(err("bf16_shape.st", R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", data),
             Catch::Contains("needs 4 bytes"));
  CHECK_THAT(err("neg_shape.st", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data),
             Catch::Contains("\"w\"") && Catch::Contains("shape"));
  CHECK_THAT(err("no_offsets.st", R"({"w":{"dtype":"F32","shape":[2]}})", data),
             Catch::Contains("\"w\"") && Catch::Contains("data_offsets"));
  const std::string twice = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_THAT(err("dup.st", twice, data), Catch::Contains("\"w\" appears twice"));
  CHECK_THAT(
      err("meta.st", R"({"__metadata__":{"epoch":3},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data),
      Catch::Contains("__metadata__.epoch"));
  // Known but not floating point: validated, refused only when read as fp32.
  SafetensorsReader ints(raw_file(dir, "ints.st", R"({"i":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", data));
  std::vector<float> out(2);
  CHECK_THROWS_WITH(ints.read_f32("i", out.data()), Catch::Contains("\"i\"") && Catch::Contains("I32"));
  CHECK_THROWS_WITH(SafetensorsReader(dir.file("absent.st")), Catch::Contains("absent.st"));
}

TEST_CASE("safetensors writer refuses reserved and repeated names", "[safetensors]") {
  TempDir dir;
  float x = 1;
  CHECK_THROWS_AS(write_safetensors(dir.file("a.st"), {{"__metadata__", DType::F32, {1}, &x}}), zt::Error);
  CHECK_THROWS_AS(write_safetensors(dir.file("b.st"), {{"w", DType::F32, {1}, &x}, {"w", DType::F32, {1}, &x}}),
                  zt::Error);
}
