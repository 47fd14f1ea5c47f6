// ddp::Environment::FromProcess; see environment.h.
#include "ddp/environment.h"

#include <charconv>
#include <cstdlib>

namespace ddp {
namespace {

ddprun::Result<std::string> Text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return ddprun::InvalidArgumentError(std::string(name) +
                                        " is not set; run this program under ddprun");
  }
  return std::string(value);
}

template <typename Int>
ddprun::Status Integer(const char* name, Int min_value, Int& out) {
  auto text = Text(name);
  if (!text.ok()) return text.status();
  const std::string& s = text.value();
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (error != std::errc() || end != s.data() + s.size() || out < min_value) {
    return ddprun::InvalidArgumentError(std::string(name) + " must be an integer of at least " +
                                        std::to_string(min_value) + ", not '" + s + "'");
  }
  return ddprun::Status::Ok();
}

}  // namespace

ddprun::Result<Environment> Environment::FromProcess() {
  Environment env;
  for (ddprun::Status status :
       {Integer("RANK", 0, env.rank), Integer("WORLD_SIZE", 1, env.world_size),
        Integer("LOCAL_RANK", 0, env.local_rank),
        Integer("LOCAL_WORLD_SIZE", 1, env.local_world_size),
        Integer("GROUP_RANK", 0, env.group_rank),
        Integer("TORCHELASTIC_RESTART_COUNT", 0, env.restart_count),
        Integer("MASTER_PORT", 1, env.master_port),
        Integer<int64_t>("DDPRUN_ROUND", 0, env.round)}) {
    if (!status.ok()) return status;
  }
  if (env.rank >= env.world_size) {
    return ddprun::InvalidArgumentError("RANK " + std::to_string(env.rank) +
                                        " is not below WORLD_SIZE " +
                                        std::to_string(env.world_size));
  }
  for (auto [name, field] : {std::pair{"MASTER_ADDR", &env.master_addr},
                             {"DDPRUN_JOB_ID", &env.job_id},
                             {"DDPRUN_STORE_ADDR", &env.store_address}}) {
    auto text = Text(name);
    if (!text.ok()) return text.status();
    *field = std::move(text).value();
  }
  if (const char* token = std::getenv("DDPRUN_TOKEN")) env.store_token = token;
  return env;
}

}  // namespace ddp
