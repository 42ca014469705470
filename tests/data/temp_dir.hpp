#pragma once
// A fresh directory under the system temp directory, removed with everything in it at scope exit.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("zt_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string write(const std::string& name, const void* data, size_t bytes) const {
    std::ofstream out(file(name), std::ios::binary);
    out.write(static_cast<const char*>(data), std::streamsize(bytes));
    return file(name);
  }
  std::string write(const std::string& name, const std::string& text) const {
    return write(name, text.data(), text.size());
  }
};
