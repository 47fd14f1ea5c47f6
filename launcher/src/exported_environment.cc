// ExportedEnvironment; see exported_environment.h.
#include "exported_environment.h"

#include <cctype>
#include <set>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

bool IsVariableName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

bool IsHostSpecificVariable(const std::string& name) {
  static const std::set<std::string> names = {
      "HOSTNAME", "HOST", "DISPLAY", "XAUTHORITY", "PWD", "OLDPWD", "SHLVL", "_", "TMUX",
      "TMUX_PANE", "STY", "WINDOW", "WINDOWID", "TERM_SESSION_ID", "MAIL", "KRB5CCNAME",
      "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "XDG_SESSION_TYPE",
      "XDG_SESSION_CLASS", "XDG_SEAT", "XDG_VTNR", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_CLIENT",
      "SSH_CONNECTION", "SSH_TTY", "TMPDIR",
      // Which of this host's devices to use: each host has its own.
      "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
      "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
      // A secret: each daemon gives its agents the token themselves.
      "DDPRUN_TOKEN"};
  return names.count(name) > 0 || name.rfind("SSH_", 0) == 0;
}

Result<std::map<std::string, std::string>> ExportedEnvironment(
    const std::string& spec, const std::map<std::string, std::string>& environment) {
  std::map<std::string, std::string> exported;
  // ddprun's own settings (PET_<FLAG>) always travel: they are options, not the program's.
  for (const auto& [name, value] : environment) {
    if (name.rfind("PET_", 0) == 0) exported[name] = value;
  }
  if (spec == "NONE") return exported;
  bool first = true;
  for (const std::string& item : SplitCommas(spec)) {
    if (item == "ALL" && first) {
      for (const auto& [name, value] : environment) {
        if (!IsHostSpecificVariable(name)) exported[name] = value;
      }
    } else {
      const size_t equals = item.find('=');
      const std::string name = item.substr(0, equals);
      if (!IsVariableName(name) || name == "ALL" || name == "NONE") {
        const std::string wanted =
            "--export must be ALL, NONE or a list of NAME and NAME=value (ALL first, if at all)";
        return InvalidArgumentError(wanted + ", not '" + spec + "': '" + item + "'");
      }
      if (equals != std::string::npos) {
        exported[name] = item.substr(equals + 1);
      } else if (auto it = environment.find(name); it != environment.end()) {
        exported[name] = it->second;
      }
    }
    first = false;
  }
  return exported;
}

}  // namespace ddprun
