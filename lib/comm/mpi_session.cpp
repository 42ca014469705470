#include "comm/mpi_session.hpp"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "comm/mpi_control_channel.hpp"
#include "core/error.hpp"

namespace zt {

WorldInfo mpi_world_info() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) fail("mpi_world_info: MPI is not initialised (create a zt::MpiSession first)");
  return mpi_world_info(MPI_COMM_WORLD);
}

WorldInfo mpi_world_info(MPI_Comm comm) {
  WorldInfo w;
  MPI_Comm_rank(comm, &w.rank);
  MPI_Comm_size(comm, &w.world_size);
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &w.local_rank);
  MPI_Comm_size(local, &w.local_size);
  MPI_Comm_free(&local);
  return w;
}

MpiSession::MpiSession() { init(nullptr, nullptr); }
MpiSession::MpiSession(int& argc, char**& argv) { init(&argc, &argv); }

void MpiSession::init(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) {
    MPI_Query_thread(&thread_level_);
  } else {
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_) != MPI_SUCCESS)
      fail("MPI_Init_thread failed");
    owns_mpi_ = true;
  }
  world_ = mpi_world_info();
}

MpiSession::~MpiSession() {
  if (!owns_mpi_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

void ensure_mpi_initialised() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (finalised) fail("MPI was already finalised; communicators must be created before that");
  if (initialised) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    fail("MPI_Init_thread failed");
  std::atexit([] {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  });
}

void abort_job(int exit_code, std::string_view reason) {
  if (auto logger = spdlog::default_logger_raw()) {
    logger->critical("{}", reason);
    logger->flush();
  } else {
    std::fprintf(stderr, "%.*s\n", int(reason.size()), reason.data());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace zt
