#pragma once
// Bad input must throw a zt::Error whose message names what is wrong.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"

namespace zt::test {

template <typename F>
void require_error_naming(F&& make, const std::string& field) {
  try {
    make();
    FAIL("no zt::Error; expected one naming " << field);
  } catch (const Error& e) {
    REQUIRE_THAT(std::string(e.what()), Catch::Contains(field));
  }
}

}  // namespace zt::test
