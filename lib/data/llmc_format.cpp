#include "data/llmc_format.hpp"

namespace zt::llmc {

std::string mask_path_of(const std::string& token_path) {
  if (token_path.size() > 4 && token_path.compare(token_path.size() - 4, 4, ".bin") == 0)
    return token_path.substr(0, token_path.size() - 4) + ".mask";
  return token_path + ".mask";
}

}  // namespace zt::llmc
