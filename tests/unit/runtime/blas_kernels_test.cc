// OpenBLAS's kernels match the CPU: on a CPU with AVX2 and FMA, never a pre-AVX fallback (what
// OpenBLAS picks by itself on a virtual machine that hides the CPU's model).
#include "ops/cpu/blas_kernels.h"

#include <catch2/catch.hpp>
#include <set>

#include "support/skip.h"

TEST_CASE("OpenBLAS runs kernels for the instruction sets this CPU has") {
  const auto& kernels = ddp::cpu::ChooseBlasKernels();
  INFO("OpenBLAS detected " << kernels.detected << ", uses " << kernels.in_use);
  REQUIRE_FALSE(kernels.in_use.empty());
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    return ddprun::testing::SkipTest("this CPU has no AVX2 and FMA");
  }
  const std::set<std::string> pre_avx = {"Prescott", "Core2",  "Penryn",     "Dunnington",
                                         "Nehalem",  "Katmai", "Coppermine", "Northwood",
                                         "Banias",   "Atom",   "Unknown"};
  CHECK_FALSE(pre_avx.contains(kernels.in_use));
  // A second call changes nothing.
  CHECK(&ddp::cpu::ChooseBlasKernels() == &kernels);
}
