#pragma once
// The denominator of MFU on the CPU backend: the fp32 matmul rate this rank reaches, measured
// once at start-up with a square GEMM through the same library the model uses.
namespace zt {
double measure_peak_flops();
}
