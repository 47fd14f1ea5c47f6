// Element-wise reductions of the CPU backend: dst[i] = dst[i] op src[i] for every data type, and
// the division that turns a sum into an average. float16 and bfloat16 are computed in float32 and
// rounded back (to nearest, ties to even) after each step, so the result depends only on the
// order of the operands, which the ring fixes: every rank and every run gets the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ddp/tensor.h"

namespace ddp::cpu {

// dst = dst op src, `count` elements. kAvg reduces as kSum (see DivideInPlace).
void ReduceInto(DataType type, ReduceOp op, void* dst, const void* src, size_t count);

// data /= divisor, element-wise (integers: truncating division).
void DivideInPlace(DataType type, void* data, size_t count, int divisor);

float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t value);
uint16_t FloatToBFloat16(float value);

}  // namespace ddp::cpu
