// WorkerBinding and the CPU list format; see cpu_binding.h.
#include "ddprun/base/cpu_binding.h"

#include <algorithm>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

constexpr int kMaxCpuId = 1 << 16;

}  // namespace

std::optional<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> ids;
  if (Trim(text).empty()) return ids;
  for (const std::string& item : SplitCommas(Trim(text))) {
    const size_t dash = item.find('-');
    const auto first = ParseInteger<int>(item.substr(0, dash), 0, kMaxCpuId);
    const auto last =
        dash == std::string::npos ? first : ParseInteger<int>(item.substr(dash + 1), 0, kMaxCpuId);
    if (!first || !last || *last < *first) return std::nullopt;
    for (int id = *first; id <= *last; ++id) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string FormatCpuList(const std::vector<int>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ids[i]);
    if (j > i) text += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return text;
}

std::string WorkerBinding::Describe() const {
  return "CPUs " + FormatCpuList(cpus) + ", memory node " + std::to_string(memory_node);
}

}  // namespace ddprun
