#pragma once
// zerotrain takes its rank and world size from MPI. Processes started by torchrun or by
// DeepSpeed's launcher carry RANK and WORLD_SIZE in their environment but no MPI variables: each
// would initialise MPI alone and train as rank 0 of a world of one, without a word.
#include <functional>
#include <optional>
#include <string>

namespace zt {

using EnvLookup = std::function<const char*(const char*)>;

// The message for a process started that way (WORLD_SIZE above 1, no MPI launcher), else nullopt.
std::optional<std::string> foreign_launcher_problem(const EnvLookup& env);
std::optional<std::string> foreign_launcher_problem();  // this process's environment

}  // namespace zt
