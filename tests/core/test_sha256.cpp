// SHA-256 against FIPS 180-4's examples and `sha256sum`'s value for a file read in pieces.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/sha256.hpp"

using namespace zt;

namespace {

std::string hash(const std::string& text) {
  Sha256 h;
  h.update(text);
  return h.hex_digest();
}

}  // namespace

TEST_CASE("SHA-256 of FIPS 180-4's messages", "[core]") {
  CHECK(hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 million;  // a million 'a', fed in pieces that straddle the 64-byte blocks
  const std::string piece(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(piece);
  CHECK(million.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding needs one block, a second block, and a block of its own.
  CHECK(hash(std::string(55, 'x')) != hash(std::string(56, 'x')));
  CHECK(hash(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("SHA-256 of a file equals that of its bytes; a missing file is named", "[core]") {
  const std::string path = (std::filesystem::temp_directory_path() / "zt_sha256_test.bin").string();
  std::string bytes;
  for (int i = 0; i < 3 << 20; ++i) bytes += char(i * 7 + (i >> 9));  // more than one read of 1 MiB
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK(sha256_of_file(path) == hash(bytes));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(sha256_of_file(path), Catch::Contains(path));
}
