// Element-wise reductions; see reduce_kernels.h.
#include "reduce_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ddp::cpu {
namespace {

// `dst` and `src` never overlap (a received piece is reduced into the rank's own buffer), which
// __restrict tells the compiler, so that these loops are vectorized.
template <typename T>
void ReduceTyped(ReduceOp op, T* __restrict dst, const T* __restrict src, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      for (size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], src[i]);
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
      return;
  }
}

// 16-bit floats: through float32, one element at a time.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Reduce16(ReduceOp op, uint16_t* dst, const uint16_t* src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const float a = ToFloat(dst[i]);
    const float b = ToFloat(src[i]);
    float r = a + b;
    if (op == ReduceOp::kMin) r = std::min(a, b);
    if (op == ReduceOp::kMax) r = std::max(a, b);
    dst[i] = FromFloat(r);
  }
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1f;
  const uint32_t mantissa = half & 0x3ff;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return BitsFloat(sign | 0x7f800000 | (mantissa << 13));  // inf, NaN
  return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) {  // inf or NaN (a NaN stays a NaN)
    return static_cast<uint16_t>(sign | 0x7c00 | (magnitude > 0x7f800000 ? 0x200 : 0));
  }
  if (magnitude >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
  if (magnitude < 0x38800000) {  // below the smallest normal half: subnormal or zero
    const float scaled = std::fabs(value) * 16777216.0f;  // x 2^24: units of the smallest
    const auto units = static_cast<uint32_t>(std::nearbyint(scaled));  // ties to even
    return static_cast<uint16_t>(sign | units);
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest, ties to even.
  uint32_t half = ((magnitude >> 13) - (112 << 10));
  const uint32_t dropped = magnitude & 0x1fff;
  if (dropped > 0x1000 || (dropped == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float BFloat16ToFloat(uint16_t value) { return BitsFloat(static_cast<uint32_t>(value) << 16); }

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);  // to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

void ReduceInto(DataType type, ReduceOp op, void* dst, const void* src, size_t count) {
  switch (type) {
    case DataType::kFloat32:
      return ReduceTyped(op, static_cast<float*>(dst), static_cast<const float*>(src), count);
    case DataType::kFloat64:
      return ReduceTyped(op, static_cast<double*>(dst), static_cast<const double*>(src), count);
    case DataType::kInt32:
      return ReduceTyped(op, static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
    case DataType::kInt64:
      return ReduceTyped(op, static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
    case DataType::kFloat16:
      return Reduce16<HalfToFloat, FloatToHalf>(op, static_cast<uint16_t*>(dst),
                                                static_cast<const uint16_t*>(src), count);
    case DataType::kBFloat16:
      return Reduce16<BFloat16ToFloat, FloatToBFloat16>(op, static_cast<uint16_t*>(dst),
                                                        static_cast<const uint16_t*>(src), count);
  }
}

void DivideInPlace(DataType type, void* data, size_t count, int divisor) {
  if (divisor == 1) return;
  auto divide = [&](auto* values) {
    for (size_t i = 0; i < count; ++i)
      values[i] = static_cast<std::remove_reference_t<decltype(values[i])>>(values[i] / divisor);
  };
  switch (type) {
    case DataType::kFloat32:
      return divide(static_cast<float*>(data));
    case DataType::kFloat64:
      return divide(static_cast<double*>(data));
    case DataType::kInt32:
      return divide(static_cast<int32_t*>(data));
    case DataType::kInt64:
      return divide(static_cast<int64_t*>(data));
    case DataType::kFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        values[i] = FloatToHalf(HalfToFloat(values[i]) / static_cast<float>(divisor));
      }
      return;
    }
    case DataType::kBFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        values[i] = FloatToBFloat16(BFloat16ToFloat(values[i]) / static_cast<float>(divisor));
      }
      return;
    }
  }
}

}  // namespace ddp::cpu
