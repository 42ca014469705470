#pragma once
// Shared pieces of the multi-rank communicator tests: the process-wide MPI session and
// communicators, and the nccl-tests style data: every rank fills its input from a formula of
// (rank, index), and every rank computes the expected result locally from the same formula,
// reducing in rank order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/dtype.hpp"

namespace zt::test {

// Timeout used by the test communicators: long enough for 4 ranks on 2 busy cores, short
// enough that a broken test aborts instead of hanging the suite.
constexpr double kTestCommTimeout = 60.0;

MpiSession& test_session();  // initialises MPI on first use, finalises at exit
Communicator& comm();        // default options
Communicator&
small_chunk_comm();            // 7-element messages: exercises chunk pipelining on small buffers
Communicator& checked_comm();  // sequence check on

// Input value of `rank` at global element `index`, already representable in `dtype`. Magnitudes
// and signs vary so that the order of a sum changes its fp32 rounding.
float input_value(int rank, size_t index, DType dtype);

using Bytes = std::vector<unsigned char>;

// count elements of dtype: element i = input_value(rank, first_index + i).
Bytes make_input(int rank, size_t first_index, size_t count, DType dtype);
// Element i = reduction over ranks 0..world-1, in rank order, of input_value(r, first_index + i),
// accumulated in fp32 and rounded to dtype once.
Bytes expected_reduction(int world, size_t first_index, size_t count, DType dtype, ReduceOp op);
// A buffer of count elements all holding `value` (sentinels, poison).
Bytes filled(size_t count, DType dtype, float value);

// Empty string when equal; otherwise names the first differing element and both values.
std::string first_difference(const Bytes& got, const Bytes& expected, DType dtype);

// Empty string when every element of `got` is the sum over `world` ranks of input_value(r,
// first_index + i) as NCCL's ring may add it, in its own order: within a few roundings of the
// largest partial sum (bounded by the sum of magnitudes) of `expected`; otherwise names the first
// element that is not, or the sizes.
std::string sum_difference(const Bytes& got, const Bytes& expected, DType dtype, int world, size_t first_index);

}  // namespace zt::test
