#include "data/llmc_format.hpp"

namespace zt::llmc {

namespace {

std::string beside(const std::string& token_path, const char* suffix) {
  if (token_path.size() > 4 && token_path.compare(token_path.size() - 4, 4, ".bin") == 0)
    return token_path.substr(0, token_path.size() - 4) + suffix;
  return token_path + suffix;
}

}  // namespace

std::string mask_path_of(const std::string& token_path) { return beside(token_path, ".mask"); }

std::string info_path_of(const std::string& token_path) { return beside(token_path, ".meta.json"); }

std::string index_path_of(const std::string& token_path) { return beside(token_path, ".idx"); }

}  // namespace zt::llmc
