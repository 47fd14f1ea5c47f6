// Choosing OpenBLAS's kernels; see blas_kernels.h.
#include "ops/cpu/blas_kernels.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "ddprun/base/logging.h"
#include "ddprun/base/status.h"
#include "ddprun/base/worker_environment_contract.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ddp::cpu {
namespace {

// OpenBLAS's fallbacks for a CPU it does not recognize, and its pre-AVX kernels: never the
// best choice for a CPU with AVX2.
const std::set<std::string> kPreAvxCores = {"Prescott", "Core2",  "Penryn",     "Dunnington",
                                            "Nehalem",  "Katmai", "Coppermine", "Northwood",
                                            "Banias",   "Atom",   "Unknown"};

// The best of OpenBLAS's x86-64 kernel sets this CPU and OS can run: "SkylakeX" (AVX-512 F, CD,
// DQ, BW and VL, with the OS saving the AVX-512 registers), "Haswell" (AVX2 and FMA, with the OS
// saving the AVX registers), or empty.
std::string BestCoreForThisCpu() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return "";
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  const bool avx = (ecx & bit_AVX) != 0;
  const bool fma = (ecx & bit_FMA) != 0;
  if (!osxsave || !avx) return "";
  uint32_t xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr uint32_t kSseAvxState = 0x6;   // XMM and YMM registers
  constexpr uint32_t kAvx512State = 0xe0;  // opmask, ZMM0-15 upper halves, ZMM16-31
  if ((xcr0_low & kSseAvxState) != kSseAvxState) return "";
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return "";
  const unsigned avx512 = bit_AVX512F | bit_AVX512CD | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
  if ((ebx & avx512) == avx512 && (xcr0_low & kAvx512State) == kAvx512State) return "SkylakeX";
  if ((ebx & bit_AVX2) != 0 && fma) return "Haswell";
#endif
  return "";
}

BlasKernels Choose() {
  using CoreName = char* (*)();
  using Hook = void (*)();
  auto core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  auto quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  BlasKernels kernels;
  if (core_name == nullptr) return kernels;  // not OpenBLAS
  kernels.detected = kernels.in_use = core_name();
  const auto tune = ddprun::worker_env::Lookup(ddprun::worker_env::kBlasTune);
  if (quit == nullptr || init == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr ||
      tune == "0" || !kPreAvxCores.contains(kernels.detected)) {
    return kernels;
  }
  const std::string best = BestCoreForThisCpu();
  if (best.empty()) return kernels;
  // OpenBLAS reads OPENBLAS_CORETYPE when it selects its kernels; the variable is removed again
  // so that the program's children choose for themselves.
  if (::setenv("OPENBLAS_CORETYPE", best.c_str(), 1) != 0) {
    const int error = errno;
    ddprun::GetLogger("runtime")->warn(
        "{}; keeping OpenBLAS's {} kernels",
        ddprun::ErrnoError("setenv OPENBLAS_CORETYPE=" + best, error).message(), kernels.detected);
    return kernels;
  }
  quit();
  init();
  if (::unsetenv("OPENBLAS_CORETYPE") != 0) {
    // Not fatal: the program's children inherit this choice instead of making their own.
    const int error = errno;
    ddprun::GetLogger("runtime")->warn(
        "{}", ddprun::ErrnoError("unsetenv OPENBLAS_CORETYPE", error).message());
  }
  kernels.in_use = core_name();
  return kernels;
}

}  // namespace

const BlasKernels& ChooseBlasKernels() {
  static const BlasKernels kernels = Choose();
  return kernels;
}

// At load time: before main, so before any thread of the program can be inside OpenBLAS (whose
// own constructor, a dependency's, has run already).
[[maybe_unused]] const BlasKernels& kChosenAtLoad = ChooseBlasKernels();

}  // namespace ddp::cpu
