// Parsing helpers; see parsing.h.
#include "ddprun/base/parsing.h"

#include <cmath>
#include <cstdlib>

namespace ddprun {

std::optional<double> ParseNumber(std::string_view text) {
  const std::string copy(text);  // strtod needs a terminated string
  char* end = nullptr;
  const double number = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0' || !std::isfinite(number)) return std::nullopt;
  return number;
}

std::optional<std::chrono::milliseconds> ParseSeconds(std::string_view text, double max_seconds) {
  const auto seconds = ParseNumber(text);
  if (!seconds || !(*seconds >= 0) || *seconds > max_seconds) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(*seconds * 1000)));
}

std::string Trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(kSpace);
  return std::string(text.substr(first, last - first + 1));
}

std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    items.emplace_back(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    if (end == std::string_view::npos) return items;
    start = end + 1;
  }
}

}  // namespace ddprun
