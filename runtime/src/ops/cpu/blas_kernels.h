// Choosing OpenBLAS's kernels from the instruction sets the CPU has. OpenBLAS (Debian's build,
// with every x86-64 kernel in it) picks its kernels from the CPU's model number; on a virtual
// machine that hides the model (a generic "Intel Xeon Processor") it falls back to its oldest
// kernels (Prescott: SSE3), three to four times slower at the runtime's matrix products than the
// AVX2 or AVX-512 ones the CPU runs. When OpenBLAS has fallen back like that and the CPU and the
// operating system support AVX-512 (or AVX2 with FMA), the runtime has it load those kernels
// instead, once, when the library is loaded: before main for a program linked with it, so before
// any thread of the program can be inside OpenBLAS. (A program that dlopen()s the runtime while
// other threads of it run OpenBLAS should set DDPRUN_BLAS_TUNE=0.)
//
// Left alone: a CPU OpenBLAS recognized, an OPENBLAS_CORETYPE the user set, DDPRUN_BLAS_TUNE=0,
// an OpenBLAS without runtime kernel selection, other architectures.
#pragma once

#include <string>

namespace ddp::cpu {

struct BlasKernels {
  std::string detected;  // OpenBLAS's own choice ("Prescott", "SkylakeX", ...); empty: unknown
  std::string in_use;    // what it uses now
};

// Makes the choice described above (the first call only) and says what OpenBLAS uses.
const BlasKernels& ChooseBlasKernels();

}  // namespace ddp::cpu
