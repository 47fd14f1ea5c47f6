// The CPU backend's element-wise kernels, and the 16-bit float conversions they rely on.
#include "comm/cpu/reduce_kernels.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace ddp;
using namespace ddp::cpu;

TEST_CASE("float16 conversions round to nearest even and keep zeros, infinities and NaN") {
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);
  CHECK(FloatToHalf(65520.0f) == 0x7c00);  // rounds up to infinity
  CHECK(FloatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  CHECK(FloatToHalf(-0.0f) == 0x8000);
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));  // the smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // a tie: to even (down)
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // a tie: to even (up)
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {  // every finite half survives a round trip
    CHECK(FloatToHalf(HalfToFloat(static_cast<uint16_t>(bits))) == bits);
  }
}

TEST_CASE("bfloat16 conversions round to nearest even") {
  CHECK(FloatToBFloat16(1.0f) == 0x3f80);
  CHECK(BFloat16ToFloat(0x3f80) == 1.0f);
  CHECK(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // a tie: to even
  CHECK(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // a tie: to even
  CHECK(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

TEST_CASE("reductions combine element by element, an average divides once at the end") {
  float a[3] = {1, 5, -2};
  const float b[3] = {2, 3, 4};
  ReduceInto(DataType::kFloat32, ReduceOp::kMax, a, b, 3);
  CHECK(a[0] == 2);
  CHECK(a[1] == 5);
  CHECK(a[2] == 4);
  int64_t c[2] = {7, -7};
  const int64_t d[2] = {2, 2};
  ReduceInto(DataType::kInt64, ReduceOp::kAvg, c, d, 2);  // summed...
  DivideInPlace(DataType::kInt64, c, 2, 2);               // ...then divided, truncating
  CHECK(c[0] == 4);
  CHECK(c[1] == -2);
  uint16_t h[1] = {FloatToHalf(1.5f)};
  const uint16_t k[1] = {FloatToHalf(2.25f)};
  ReduceInto(DataType::kFloat16, ReduceOp::kSum, h, k, 1);
  CHECK(HalfToFloat(h[0]) == 3.75f);
}
