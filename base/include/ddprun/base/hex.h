// Bytes as lowercase hexadecimal: how random tokens and run ids are spelled.
#pragma once

#include <cstddef>
#include <string>

namespace ddprun {

// Two lowercase hex digits per byte, in order.
std::string HexEncode(const unsigned char* bytes, size_t size);

}  // namespace ddprun
