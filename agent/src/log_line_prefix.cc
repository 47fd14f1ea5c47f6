// LogLinePrefix; see log_line_prefix.h.
#include "ddprun/agent/log_line_prefix.h"

#include <limits.h>
#include <unistd.h>

#include <cctype>
#include <map>

namespace ddprun {
namespace {

bool StartsIdentifier(char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); }
bool InIdentifier(char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); }

// The kernel's name for this host, as Python's socket.gethostname() gives torchrun's ${hostname}.
std::string KernelHostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

std::string LogLinePrefix(const std::optional<std::string>& prefix_template, int global_rank,
                          int local_rank, const std::string& role) {
  if (!prefix_template) return "[rank" + std::to_string(global_rank) + "]: ";
  const std::map<std::string, std::string, std::less<>> values = {
      {"rank", std::to_string(global_rank)},
      {"local_rank", std::to_string(local_rank)},
      {"role_name", role},
      {"hostname", KernelHostName()}};
  const std::string& text = *prefix_template;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out += text[i++];
      continue;
    }
    if (text[i + 1] == '$') {  // "$$": one "$"
      out += '$';
      i += 2;
      continue;
    }
    const bool braced = text[i + 1] == '{';
    const size_t start = i + (braced ? 2 : 1);
    size_t end = start;
    if (end < text.size() && StartsIdentifier(text[end])) {
      while (end < text.size() && InIdentifier(text[end])) ++end;
    }
    const bool closed = !braced || (end < text.size() && text[end] == '}');
    auto value = values.find(std::string_view(text).substr(start, end - start));
    if (end == start || !closed || value == values.end()) {
      out += text[i++];  // not a placeholder it knows: kept as written
      continue;
    }
    out += value->second;
    i = end + (braced ? 1 : 0);
  }
  return out;
}

}  // namespace ddprun
