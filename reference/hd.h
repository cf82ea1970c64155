// DCP_HD marks a function compiled for the host and, under nvcc, the device
// too (always inline: these are small formulas shared by both sides).
#pragma once

#ifdef __CUDACC__
#define DCP_HD __host__ __device__ __forceinline__
#else
#define DCP_HD inline
#endif
