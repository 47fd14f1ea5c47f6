// ExpandHostlist; see slurm_hostlist.h.
#include "slurm_hostlist.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

// One number of a group, printed at its width (0: as is).
struct Number {
  uint64_t value;
  int width;
};

// A name's parts in order: text, or a group's numbers.
struct Part {
  std::string text;
  std::vector<Number> numbers;  // empty for text
};

Status Invalid(std::string_view hostlist, const std::string& why) {
  return InvalidArgumentError("invalid Slurm hostlist '" + std::string(hostlist) + "': " + why);
}

// "1,3-4,07" -> its numbers; false for anything else.
bool ParseGroup(std::string_view group, std::vector<Number>& numbers, size_t budget) {
  size_t start = 0;
  while (start <= group.size()) {
    size_t end = group.find(',', start);
    if (end == std::string_view::npos) end = group.size();
    const std::string_view item = group.substr(start, end - start);
    const size_t dash = item.find('-');
    const std::string_view low_text = item.substr(0, dash);
    const std::string_view high_text =
        dash == std::string_view::npos ? low_text : item.substr(dash + 1);
    const auto low = ParseInteger<uint64_t>(low_text);
    const auto high = ParseInteger<uint64_t>(high_text);
    if (!low || !high || *low > *high ||
        low_text.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    const int width =
        low_text.size() > 1 && low_text[0] == '0' ? static_cast<int>(low_text.size()) : 0;
    if (*high - *low >= budget - numbers.size()) return false;  // too many: refused whole
    for (uint64_t value = *low; value <= *high; ++value) numbers.push_back({value, width});
    start = end + 1;
  }
  return true;
}

// One name expression (no separator inside) -> its names, appended; `bytes` counts the
// characters of every name so far.
Status ExpandName(std::string_view hostlist, std::string_view name, std::vector<std::string>& names,
                  size_t& bytes) {
  std::vector<Part> parts;
  size_t at = 0;
  while (at < name.size()) {
    const size_t open = name.find('[', at);
    const std::string_view text =
        name.substr(at, open == std::string_view::npos ? name.npos : open - at);
    if (text.find(']') != std::string_view::npos) return Invalid(hostlist, "a ']' without '['");
    if (open == std::string_view::npos) {
      if (!parts.empty()) {
        return Invalid(hostlist, "text after the last bracket group ('" + std::string(text) +
                                     "'), which Slurm refuses");
      }
      parts.push_back({std::string(text), {}});
      break;
    }
    if (!text.empty()) parts.push_back({std::string(text), {}});
    const size_t close = name.find(']', open);
    if (close == std::string_view::npos) return Invalid(hostlist, "a '[' without ']'");
    const std::string_view group = name.substr(open + 1, close - open - 1);
    if (group.find('[') != std::string_view::npos) return Invalid(hostlist, "nested brackets");
    Part numbers;
    if (!ParseGroup(group, numbers.numbers, kMaxHostlistNames)) {
      return Invalid(hostlist, "'[" + std::string(group) +
                                   "]' is not a list of numbers and ranges LO-HI with LO <= HI");
    }
    parts.push_back(std::move(numbers));
    at = close + 1;
  }
  size_t count = 1;
  size_t longest_name = 0;
  for (const Part& part : parts) {
    longest_name += part.text.size();
    if (part.numbers.empty()) continue;
    uint64_t largest = 0;
    for (const Number& number : part.numbers) largest = std::max(largest, number.value);
    longest_name +=
        std::max(std::to_string(largest).size(), static_cast<size_t>(part.numbers.front().width));
    if (count > (kMaxHostlistNames - names.size()) / part.numbers.size()) {
      return Invalid(hostlist, "more than " + std::to_string(kMaxHostlistNames) + " names");
    }
    count *= part.numbers.size();
  }
  if (longest_name > 0 && count > (kMaxHostlistBytes - bytes) / longest_name) {
    return Invalid(hostlist,
                   "names of more than " + std::to_string(kMaxHostlistBytes >> 20) + " MiB in all");
  }
  bytes += count * longest_name;
  std::vector<std::string> expanded = {""};
  for (const Part& part : parts) {
    if (part.numbers.empty()) {
      for (std::string& prefix : expanded) prefix += part.text;
      continue;
    }
    std::vector<std::string> next;
    next.reserve(expanded.size() * part.numbers.size());
    for (const std::string& prefix : expanded) {
      for (const Number& number : part.numbers) {
        char digits[32];
        std::snprintf(digits, sizeof digits, "%0*llu", number.width,
                      static_cast<unsigned long long>(number.value));
        next.push_back(prefix + digits);
      }
    }
    expanded = std::move(next);
  }
  names.insert(names.end(), expanded.begin(), expanded.end());
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist) {
  std::vector<std::string> names;
  size_t bytes = 0;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    const bool end = i == hostlist.size();
    const char c = end ? ',' : hostlist[i];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return Invalid(hostlist, "a ']' without '['");
    const bool separator = depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)));
    if (!separator) continue;
    if (i > start)
      RETURN_IF_ERROR(ExpandName(hostlist, hostlist.substr(start, i - start), names, bytes));
    start = i + 1;
  }
  if (depth != 0) return Invalid(hostlist, "a '[' without ']'");
  if (names.empty()) return Invalid(hostlist, "it names no host");
  return names;
}

}  // namespace ddprun
