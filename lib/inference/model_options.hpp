#pragma once
// The options `generate` and `eval` share: which model, and where it computes.
#include <string>

namespace CLI {
class App;
}

namespace zt {

// --model (required), --device (cpu, cuda or auto, as training.device chooses) and --dtype (fp32
// or bf16, what the model computes in on a GPU).
void add_model_options(CLI::App& command, std::string& model, std::string& device, std::string& dtype);

}  // namespace zt
