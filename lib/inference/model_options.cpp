#include "inference/model_options.hpp"

#include <CLI/CLI.hpp>

namespace zt {

void add_model_options(CLI::App& command, std::string& model, std::string& device, std::string& dtype) {
  command.add_option("--model", model, "a checkpoint directory, or a model directory / safetensors file")->required();
  command.add_option("--device", device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  command.add_option("--dtype", dtype, "fp32 or bf16: what the model computes in on a GPU (the CPU: fp32)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

}  // namespace zt
