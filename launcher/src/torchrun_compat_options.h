// The torchrun flags that are not about what ddprun does but about how torchrun is built: each is
// either accepted with torchrun's meaning (--virtual_local_rank, --signals_to_handle with
// torchrun's signals, --event_log_handler, --numa_binding, --log_line_prefix_template) or
// refused with a one-line message that names it as not supported and says what to use instead
// (--logs_specs, --duplicate_*_filters, --print_completion, and torch.distributed.launch's
// --use_env and --local_rank). Each also reads its PET_* variable, as in
// torchrun.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/flag_spec.h"
#include "ddprun/base/status.h"
#include "launch_config.h"

namespace ddprun {

struct TorchrunCompatOptions {
  bool virtual_local_rank = false;
  std::string signals_to_handle;
  std::string event_log_handler;
  std::string logs_specs;
  std::string numa_binding;
  std::string duplicate_stdout_filters;
  std::string duplicate_stderr_filters;
  std::string log_line_prefix_template;
  std::string print_completion;
  bool use_env = false;
  std::string local_rank;
};

// The flags, filling `options`.
std::vector<FlagSpec> TorchrunCompatFlags(TorchrunCompatOptions& options);

// Sets what the accepted flags mean in `config`; INVALID_ARGUMENT, naming the flag and what to
// use instead, for a refused flag or a value ddprun cannot honour.
Status ResolveTorchrunCompatOptions(const TorchrunCompatOptions& options, LaunchConfig& config);

}  // namespace ddprun
