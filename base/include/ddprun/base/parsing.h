// Parsing the small values that flags, configuration files, environment variables and the store
// carry: whole integers, seconds, trimmed words. Each returns nullopt for anything it does not
// accept whole; the caller says in its error which flag or variable was wrong.
#pragma once

#include <charconv>
#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddprun {

// `text` as a base-10 integer in [min_value, max_value], all of it (no sign but '-', no spaces).
template <typename Int>
std::optional<Int> ParseInteger(std::string_view text,
                                Int min_value = std::numeric_limits<Int>::min(),
                                Int max_value = std::numeric_limits<Int>::max()) {
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      value < min_value || value > max_value) {
    return std::nullopt;
  }
  return value;
}

// `text` as a finite decimal number, all of it ("1.5", "2", "1e3").
std::optional<double> ParseNumber(std::string_view text);

// `text` as a non-negative number of seconds, fractions allowed ("0.3", "600"), of at most
// `max_seconds`; rounded to milliseconds.
std::optional<std::chrono::milliseconds> ParseSeconds(std::string_view text,
                                                      double max_seconds = 7 * 86400);

// `text` without leading and trailing spaces, tabs, carriage returns and newlines.
std::string Trim(std::string_view text);

// "a,b,c" -> {"a", "b", "c"}; "" -> {""}; "a," -> {"a", ""}.
std::vector<std::string> SplitCommas(std::string_view text);

}  // namespace ddprun
