// The NCCL calls of lib/comm/nccl_communicator.cpp for the emulated build: the ranks are threads of
// one process, each on its own emulated device, so that the NCCL communicator, its uneven grouped
// paths and its watchdog run in CI without a GPU.
// - ncclCommInitRank waits until every rank of the id has joined, and refuses two ranks on one
//   device (ncclInvalidUsage), as NCCL does.
// - A collective is one op of the emulated device (emulated_device.hpp) on every rank's stream: it
//   waits for what each rank queued before it and runs once the last rank has called, so a rank
//   that never calls leaves the others' streams stuck, as on GPUs (the watchdog's case).
// - Sums run around the ring as NCCL's ring algorithm does: the chunk a rank ends up owning starts
//   at the next rank, and 16-bit values round at every hop; so results are not the rank-order sum.
// - Buffers must be device memory; ranks that disagree on a collective (op, count, type, root) end
//   the process with a message (NCCL would hang or mix up buffers).
// ncclCommAbort releases the ops still waiting for ranks: they then do nothing.
// A test may fail a rank's collectives (zt::emu::nccl_fail_collectives): ncclCommGetAsyncError and
// ncclGetLastError then report it.
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "emulated_device.hpp"

namespace {

enum class Kind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, SendRecv };

// One ncclSend or ncclRecv of a group.
struct P2p {
  bool send;
  int peer;
  const void* from;
  void* to;
  size_t bytes;  // elements until the call, then bytes
};

struct Call {
  Kind kind;
  size_t count;  // per rank: the reduced length, the piece of a scatter or gather
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  std::vector<const void*> send;  // per rank; null where a rank sends nothing (a broadcast's non-roots)
  std::vector<void*> recv;        // per rank; null where a rank receives nothing (a reduce's non-roots)
  int arrived = 0;
  std::vector<std::vector<P2p>> p2p;  // SendRecv: per rank, its group's sends and receives
};

// The ranks of one unique id.
struct Clique {
  int nranks = 0;
  int joined = 0;
  std::vector<int> devices;  // physical device per rank, -1 until joined
  std::map<uint64_t, std::shared_ptr<Call>> calls;  // by sequence number, until every rank has called
  std::set<const void*> open;  // calls queued and not yet run
  bool aborted = false;
};

std::mutex mutex;
std::condition_variable joined;
std::map<std::string, std::shared_ptr<Clique>> cliques;  // by unique id
uint64_t next_id = 0;
thread_local int group_depth = 0;
// The sends and receives of the open group, run as one call at its end (as NCCL fuses them).
thread_local std::vector<P2p> group_p2p;
thread_local ncclComm_t group_comm = nullptr;
thread_local cudaStream_t group_stream = nullptr;

struct PlannedFailure {
  uint64_t collective;
  ncclResult_t result;
};
std::map<int, PlannedFailure> planned_failures;  // by rank

}  // namespace

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank;
  uint64_t issued = 0;
  ncclResult_t async_error = ncclSuccess;  // under mutex
  std::string last_error;                  // under mutex
};

namespace {

[[noreturn]] void fatal(const std::string& message) {
  std::fprintf(stderr, "emulated NCCL: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

size_t type_size(ncclDataType_t t) { return t == ncclFloat32 ? 4 : 2; }
bool supported(ncclDataType_t t) { return t == ncclFloat32 || t == ncclBfloat16 || t == ncclFloat16; }

float load(ncclDataType_t t, const void* p, size_t i) {
  if (t == ncclFloat32) return static_cast<const float*>(p)[i];
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(p) + 2 * i, 2);
  return t == ncclBfloat16 ? zt::bf16_to_f32(h) : zt::f16_to_f32(h);
}

// v rounded to the type (what a hop of the ring sends on).
float rounded(ncclDataType_t t, float v) {
  if (t == ncclFloat32) return v;
  return t == ncclBfloat16 ? zt::bf16_to_f32(zt::f32_to_bf16(v)) : zt::f16_to_f32(zt::f32_to_f16(v));
}

void store(ncclDataType_t t, std::vector<char>& out, size_t i, float v) {
  if (t == ncclFloat32) {
    std::memcpy(out.data() + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = t == ncclBfloat16 ? zt::f32_to_bf16(v) : zt::f32_to_f16(v);
  std::memcpy(out.data() + 2 * i, &h, 2);
}

// Element i of the reduction of `count` elements from every rank's send + offset, around the ring
// from rank `first`.
float reduce(const Call& c, size_t offset, size_t i, int first) {
  const int n = int(c.send.size());
  float acc = load(c.type, c.send[size_t(first)], offset + i);
  for (int k = 1; k < n; ++k) {
    const float x = load(c.type, c.send[size_t((first + k) % n)], offset + i);
    acc = rounded(c.type, c.op == ncclMax ? std::max(acc, x) : acc + x);
  }
  return acc;
}

// Runs a collective over every rank's buffers; results go through a staging copy, so in-place
// calls read their inputs before anything is written.
void run(const Call& c) {
  const int n = int(c.send.size());
  const size_t es = type_size(c.type);
  switch (c.kind) {
    case Kind::AllReduce: {
      std::vector<char> out(c.count * es);
      const size_t chunk = (c.count + size_t(n) - 1) / size_t(n);
      for (size_t i = 0; i < c.count; ++i) store(c.type, out, i, reduce(c, 0, i, int(i / chunk + 1) % n));
      for (void* r : c.recv) std::memcpy(r, out.data(), out.size());
      return;
    }
    case Kind::ReduceScatter: {
      std::vector<std::vector<char>> out(size_t(n), std::vector<char>(c.count * es));
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < c.count; ++i)
          store(c.type, out[size_t(r)], i, reduce(c, size_t(r) * c.count, i, (r + 1) % n));
      for (int r = 0; r < n; ++r) std::memcpy(c.recv[size_t(r)], out[size_t(r)].data(), c.count * es);
      return;
    }
    case Kind::Reduce: {
      std::vector<char> out(c.count * es);
      for (size_t i = 0; i < c.count; ++i) store(c.type, out, i, reduce(c, 0, i, (c.root + 1) % n));
      std::memcpy(c.recv[size_t(c.root)], out.data(), out.size());
      return;
    }
    case Kind::AllGather: {
      std::vector<char> all(size_t(n) * c.count * es);
      for (int r = 0; r < n; ++r) std::memcpy(all.data() + size_t(r) * c.count * es, c.send[size_t(r)], c.count * es);
      for (void* r : c.recv) std::memcpy(r, all.data(), all.size());
      return;
    }
    case Kind::SendRecv: {
      // Each receive takes the next send its peer addressed to this rank, of the same count.
      std::vector<std::vector<size_t>> taken(size_t(n), std::vector<size_t>(size_t(n), 0));
      for (int r = 0; r < n; ++r)
        for (const P2p& in : c.p2p[size_t(r)]) {
          if (in.send) continue;
          size_t seen = 0;
          const P2p* match = nullptr;
          for (const P2p& out : c.p2p[size_t(in.peer)])
            if (out.send && out.peer == r && seen++ == taken[size_t(in.peer)][size_t(r)]) match = &out;
          if (!match || match->bytes != in.bytes)
            fatal("rank " + std::to_string(r) + " receives " + std::to_string(in.bytes) + " bytes from rank " +
                  std::to_string(in.peer) + ", which sends " + (match ? std::to_string(match->bytes) : "none"));
          ++taken[size_t(in.peer)][size_t(r)];
          std::memcpy(in.to, match->from, in.bytes);
        }
      return;
    }
    case Kind::Broadcast: {
      std::vector<char> value(static_cast<const char*>(c.send[size_t(c.root)]),
                              static_cast<const char*>(c.send[size_t(c.root)]) + c.count * es);
      for (void* r : c.recv) std::memmove(r, value.data(), value.size());
      return;
    }
  }
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "ncclAllReduce";
    case Kind::ReduceScatter: return "ncclReduceScatter";
    case Kind::AllGather: return "ncclAllGather";
    case Kind::Broadcast: return "ncclBroadcast";
    case Kind::Reduce: return "ncclReduce";
    case Kind::SendRecv: return "ncclSend/ncclRecv";
  }
  return "nccl";
}

bool on_device(const void* p) { return zt::emu::memory_kind(p) == zt::emu::MemoryKind::Device; }

// Rank comm->rank's part of its next collective.
ncclResult_t collective(Kind kind, const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream, std::vector<P2p> p2p = {}) {
  if (!comm || !supported(type) || (op != ncclSum && op != ncclMax)) return ncclInvalidArgument;
  Clique& q = *comm->clique;
  if ((kind == Kind::Broadcast || kind == Kind::Reduce) && (root < 0 || root >= q.nranks)) return ncclInvalidArgument;
  const bool sends = kind != Kind::Broadcast || comm->rank == root;
  const bool receives = kind != Kind::Reduce || comm->rank == root;
  if (count > 0 && ((sends && !on_device(send)) || (receives && !on_device(recv)))) return ncclInvalidArgument;
  for (const P2p& x : p2p)
    if (x.peer < 0 || x.peer >= q.nranks || (x.bytes > 0 && !on_device(x.send ? x.from : x.to)))
      return ncclInvalidArgument;
  std::shared_ptr<Call> call;
  {
    std::lock_guard lock(mutex);
    if (q.aborted) return ncclInvalidUsage;
    const uint64_t seq = ++comm->issued;
    const auto failure = planned_failures.find(comm->rank);
    if (failure != planned_failures.end() && seq >= failure->second.collective) {
      comm->async_error = failure->second.result;
      comm->last_error = std::string(kind_name(kind)) + " #" + std::to_string(seq) + " of rank " +
                         std::to_string(comm->rank) + " failed in the network (a failure the test asked for)";
      return ncclSuccess;  // as a kernel that never finishes: the error comes asynchronously
    }
    auto& slot = q.calls[seq];
    if (!slot) {
      slot = std::make_shared<Call>(Call{kind, count, type, op, root, std::vector<const void*>(size_t(q.nranks)),
                                         std::vector<void*>(size_t(q.nranks)), 0,
                                         std::vector<std::vector<P2p>>(size_t(q.nranks))});
      q.open.insert(slot.get());
    } else if (slot->kind != kind || slot->count != count || slot->type != type || slot->op != op ||
               slot->root != root) {
      fatal("rank " + std::to_string(comm->rank) + " called " + kind_name(kind) + " as collective #" +
            std::to_string(seq) + " with other arguments than rank 0 did (" + kind_name(slot->kind) + ")");
    }
    call = slot;
    call->send[size_t(comm->rank)] = sends ? send : nullptr;
    call->recv[size_t(comm->rank)] = receives ? recv : nullptr;
    call->p2p[size_t(comm->rank)] = std::move(p2p);
    if (++call->arrived == q.nranks) q.calls.erase(seq);
  }
  std::shared_ptr<Clique> clique = comm->clique;
  zt::emu::join(call.get(), q.nranks, stream, kind_name(kind), [call, clique] {
    {
      std::lock_guard lock(mutex);
      clique->open.erase(call.get());
    }
    if (call->count > 0 || call->kind == Kind::SendRecv) run(*call);
  });
  return ncclSuccess;
}

}  // namespace

void zt::emu::nccl_fail_collectives(int rank, uint64_t collective, int nccl_result) {
  std::lock_guard lock(mutex);
  planned_failures[rank] = PlannedFailure{collective, ncclResult_t(nccl_result)};
}

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (emulated NCCL)";
    case ncclSystemError: return "system error (emulated NCCL)";
    case ncclRemoteError: return "remote process exited or there was a network error (emulated NCCL)";
    default: return "error (emulated NCCL)";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::lock_guard lock(mutex);
  *id = ncclUniqueId{};
  std::snprintf(id->internal, sizeof id->internal, "emulated-nccl-%llu", static_cast<unsigned long long>(++next_id));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int logical = 0;
  if (cudaGetDevice(&logical) != cudaSuccess) return ncclSystemError;
  const int device = zt::emu::physical_device(logical);
  std::unique_lock lock(mutex);
  auto& q = cliques[std::string(id.internal, strnlen(id.internal, sizeof id.internal))];
  if (!q) {
    q = std::make_shared<Clique>();
    q->nranks = nranks;
    q->devices.assign(size_t(nranks), -1);
  }
  if (q->nranks != nranks || q->devices[size_t(rank)] != -1) return ncclInvalidUsage;
  q->devices[size_t(rank)] = device;
  ++q->joined;
  joined.notify_all();
  if (!joined.wait_for(lock, std::chrono::seconds(120), [&] { return q->joined == q->nranks; }))
    return ncclSystemError;  // a rank never came
  for (int r = 0; r < nranks; ++r)
    if (r != rank && q->devices[size_t(r)] == device) return ncclInvalidUsage;  // "Duplicate GPU detected"
  *comm = new ncclComm{q, rank, 0, ncclSuccess, {}};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return ncclInvalidArgument;
  std::lock_guard lock(mutex);
  *error = comm->async_error;
  return ncclSuccess;
}

const char* ncclGetLastError(ncclComm_t comm) {
  static thread_local std::string copy;  // the caller's, unchanged by other threads' calls
  std::lock_guard lock(mutex);
  copy = comm ? comm->last_error : std::string();
  return copy.c_str();
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::vector<const void*> open;
  {
    std::lock_guard lock(mutex);
    comm->clique->aborted = true;
    open.assign(comm->clique->open.begin(), comm->clique->open.end());
  }
  for (const void* key : open) zt::emu::cancel(key);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective(Kind::AllReduce, send, recv, count, type, op, -1, comm, stream);
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return collective(Kind::ReduceScatter, send, recv, count, type, op, -1, comm, stream);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective(Kind::AllGather, send, recv, count, type, ncclSum, -1, comm, stream);
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective(Kind::Broadcast, send, recv, count, type, ncclSum, root, comm, stream);
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return collective(Kind::Reduce, send, recv, count, type, op, root, comm, stream);
}
ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0 || !group_comm) return ncclSuccess;
  std::vector<P2p> p2p = std::move(group_p2p);
  group_p2p.clear();
  ncclComm_t comm = std::exchange(group_comm, nullptr);
  return collective(Kind::SendRecv, nullptr, nullptr, 0, ncclFloat32, ncclSum, -1, comm, group_stream, std::move(p2p));
}

// Point to point inside a group only (the communicator's all-to-all), all on one communicator
// and stream: the group's calls run as one op at ncclGroupEnd.
ncclResult_t point_to_point(P2p x, ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  if (group_depth == 0 || !comm || !supported(type) || (group_comm && (group_comm != comm || group_stream != stream)))
    return ncclInvalidUsage;
  group_comm = comm;
  group_stream = stream;
  x.bytes *= type_size(type);
  group_p2p.push_back(x);
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return point_to_point(P2p{true, peer, send, nullptr, count}, type, comm, stream);
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream) {
  return point_to_point(P2p{false, peer, nullptr, recv, count}, type, comm, stream);
}

}  // extern "C"
