// DCP_HD marks a function compiled for the host and, under nvcc, the device
// too (always inline: these are small formulas shared by both sides).
#pragma once

#ifdef __CUDACC__
#define DCP_HD __host__ __device__ __forceinline__
#else
#define DCP_HD inline
#endif

// DCP_UNROLL before a loop of constant trip count: unrolled on the device
// (registers, not local memory, for arrays it indexes); nothing on the host.
#ifdef __CUDA_ARCH__
#define DCP_UNROLL _Pragma("unroll")
#else
#define DCP_UNROLL
#endif
