// --local_rank N (torch.distributed.launch, the deepspeed launcher) is checked against the local
// rank the environment gives, never used as the rank.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "config/local_rank_argument.hpp"
#include "core/error.hpp"

using zt::config::check_local_rank_argument;

namespace {

zt::config::Environment env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("--local_rank agreeing with the launcher's local rank is noted") {
  CHECK(check_local_rank_argument(1, env({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}})) ==
        "--local_rank 1 agrees with OMPI_COMM_WORLD_LOCAL_RANK; the rank comes from the launcher");
  CHECK(check_local_rank_argument(0, env({{"SLURM_LOCALID", "0"}})).find("agrees with SLURM_LOCALID") !=
        std::string::npos);
  CHECK(check_local_rank_argument(3, env({{"LOCAL_RANK", "3"}})).find("agrees with LOCAL_RANK") != std::string::npos);
  CHECK(check_local_rank_argument(0, env({})).rfind("--local_rank 0 ignored: no launcher's local rank in the "
                                                    "environment",
                                                    0) == 0);
}

TEST_CASE("--local_rank disagreeing with the launcher is an error naming both") {
  CHECK_THROWS_WITH(check_local_rank_argument(0, env({{"LOCAL_RANK", "1"}})),
                    "--local_rank 0: this process is local rank 1 (LOCAL_RANK=1); zerotrain takes its rank from the "
                    "launcher, so the argument must agree with it or be left out");
  // The MPI launcher's variable comes first: it is the one zerotrain's ranks follow.
  CHECK_THROWS_WITH(check_local_rank_argument(1, env({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"LOCAL_RANK", "1"}})),
                    Catch::StartsWith("--local_rank 1: this process is local rank 0 (OMPI_COMM_WORLD_LOCAL_RANK=0)"));
  CHECK_THROWS_WITH(check_local_rank_argument(0, env({{"SLURM_LOCALID", "x"}})),
                    "--local_rank 0: SLURM_LOCALID=x is not a local rank (expected an integer, 0 or more)");
  CHECK_THROWS_AS(check_local_rank_argument(-1, env({})), zt::Error);
}
