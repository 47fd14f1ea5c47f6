// ddp::ProcessGroup; see process_group.h.
#include "ddp/process_group.h"

#include <cmath>
#include <cstdlib>

#include "comm/communicator_factory.h"

namespace ddp {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

ddprun::Result<ProcessGroupOptions> OptionsFromEnvironment(const Environment& environment) {
  ProcessGroupOptions options;
  options.rank = environment.rank;
  options.world_size = environment.world_size;
  options.local_rank = environment.local_rank;
  options.local_world_size = environment.local_world_size;
  options.store_address = environment.store_address;
  options.security.token = environment.store_token;
  options.job_id = environment.job_id;
  options.round = environment.round;
  options.host = EnvOr("DDPRUN_NODE_ADDR", "127.0.0.1");
  options.backend = EnvOr("DDPRUN_BACKEND", "auto");
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "nccl") {
    return ddprun::InvalidArgumentError("DDPRUN_BACKEND must be auto, cpu or nccl, not '" +
                                        options.backend + "'");
  }
  options.cpu_transport = EnvOr("DDPRUN_CPU_TRANSPORT", "auto");
  if (options.cpu_transport != "auto" && options.cpu_transport != "tcp") {
    return ddprun::InvalidArgumentError("DDPRUN_CPU_TRANSPORT must be auto or tcp, not '" +
                                        options.cpu_transport + "'");
  }
  for (auto [name, field] : {std::pair{"DDPRUN_TIMEOUT", &options.timeout},
                             {"DDPRUN_STORE_RETRY", &options.store_retry}}) {
    const std::string text = EnvOr(name, "");
    if (text.empty()) continue;
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !(seconds >= 0) || seconds > 7 * 86400) {
      return ddprun::InvalidArgumentError(std::string(name) +
                                          " must be a number of seconds, not '" + text + "'");
    }
    *field = std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
  }
  if (options.timeout.count() == 0) {
    return ddprun::InvalidArgumentError("DDPRUN_TIMEOUT must be more than 0 seconds");
  }
  return options;
}

ddprun::Result<std::unique_ptr<ProcessGroup>> ProcessGroup::FromEnv() {
  auto environment = Environment::FromProcess();
  if (!environment.ok()) return environment.status();
  auto options = OptionsFromEnvironment(environment.value());
  if (!options.ok()) return options.status();
  return Create(options.value());
}

ddprun::Result<std::unique_ptr<ProcessGroup>> ProcessGroup::Create(
    const ProcessGroupOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return ddprun::InvalidArgumentError("rank " + std::to_string(options.rank) +
                                        " does not fit a world of " +
                                        std::to_string(options.world_size));
  }
  if (options.store_address.empty() || options.job_id.empty()) {
    return ddprun::InvalidArgumentError(
        "a process group needs the store's address and the job id (DDPRUN_STORE_ADDR, "
        "DDPRUN_JOB_ID); run under ddprun");
  }
  std::unique_ptr<ProcessGroup> group(new ProcessGroup(options));
  ddprun::StoreClientOptions store;
  store.address = options.store_address;
  store.security = options.security;
  store.job_id = options.job_id;
  store.round = options.round;
  store.retry_timeout = options.store_retry;
  group->store_ = ddprun::StoreClient::Connect(store);
  if (options.backend != "nccl") {  // every rank connects the CPU ring now, together
    auto cpu = CreateCommunicator(options, *group->store_, Device::kCpu);
    if (!cpu.ok()) return cpu.status();
    group->cpu_ = std::move(cpu).value();
  }
  return group;
}

ProcessGroup::~ProcessGroup() = default;

ddprun::Result<Communicator*> ProcessGroup::communicator(Device device) {
  if (device == Device::kCpu) {
    if (cpu_) return cpu_.get();
    return ddprun::FailedPreconditionError(
        "DDPRUN_BACKEND=nccl: this process group has no communicator for CPU tensors");
  }
  if (!cuda_) {
    auto created = CreateCommunicator(options_, *store_, device);
    if (!created.ok()) return created.status();
    cuda_ = std::move(created).value();
  }
  return cuda_.get();
}

}  // namespace ddp
