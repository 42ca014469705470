#include <catch2/catch.hpp>

#include "core/dtype_names.hpp"
#include "core/name_table.hpp"

using namespace zt;

namespace {

enum class Colour { Red, Green, Blue, Unnamed };
constexpr auto kColours = name_table<Colour>(
    {{Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Blue, "blue"}, {Colour::Red, "rouge"}});

}  // namespace

TEST_CASE("a name table reads every spelling, writes and lists the first", "[name_table]") {
  static_assert(kColours.name(Colour::Green) == "green");
  static_assert(kColours.find("blue") == Colour::Blue);
  CHECK(kColours.find("rouge") == Colour::Red);
  CHECK(kColours.name(Colour::Red) == "red");
  CHECK(kColours.name(Colour::Unnamed) == "?");
  CHECK_FALSE(kColours.find("Red").has_value());  // exact spelling
  CHECK(kColours.names() == std::vector<std::string>{"red", "green", "blue"});
  CHECK(kColours.list() == "red, green or blue");
  CHECK(kColours.list(",") == "red, green, blue");
  CHECK(kColours.parse("green", "paint.colour") == Colour::Green);
  CHECK_THROWS_WITH(kColours.parse("mauve", "paint.colour"),
                    "paint.colour: unknown value \"mauve\" (expected red, green or blue)");
}

TEST_CASE("dtype names: float32, bfloat16 and float16 are read, fp32, bf16 and fp16 written", "[name_table]") {
  CHECK(kDTypeNames.list() == "fp32, bf16 or fp16");
  CHECK(kDTypeNames.find("bfloat16") == DType::BF16);
  CHECK(dtype_from_name("float16") == DType::F16);
  CHECK_THROWS_WITH(dtype_from_name("int8"), "unknown dtype 'int8' (expected fp32, bf16 or fp16)");
}
