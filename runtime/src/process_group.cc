// ddp::ProcessGroup; see process_group.h.
#include "ddp/process_group.h"

#include "comm/communicator_factory.h"
#include "ddp/progress.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"
#include "rendezvous_store.h"

namespace ddp {
namespace {

namespace contract = ddprun::worker_env;

// The variable's value, or its default from the contract.
std::string ValueOrDefault(const contract::Variable& variable) {
  return contract::Lookup(variable).value_or(variable.default_value);
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
  RETURN_IF_ERROR(ddprun::ReadWorkerTlsFiles(environment.tls_ca_file, environment.tls_cert_file,
                                             environment.tls_key_file, options.security));
  options.job_id = environment.job_id;
  options.round = environment.round;
  options.host = ValueOrDefault(contract::kNodeAddr);
  options.backend = ValueOrDefault(contract::kBackend);
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "nccl") {
    return ddprun::InvalidArgumentError("DDPRUN_BACKEND must be auto, cpu or nccl, not '" +
                                        options.backend + "'");
  }
  options.cpu_transport = ValueOrDefault(contract::kCpuTransport);
  if (options.cpu_transport != "auto" && options.cpu_transport != "tcp") {
    return ddprun::InvalidArgumentError("DDPRUN_CPU_TRANSPORT must be auto or tcp, not '" +
                                        options.cpu_transport + "'");
  }
  for (auto [variable, field] : {std::pair{&contract::kTimeout, &options.timeout},
                                 {&contract::kStoreRetry, &options.store_retry}}) {
    const auto text = contract::Lookup(*variable);
    if (!text) continue;
    const auto seconds = ddprun::ParseSeconds(*text);
    if (!seconds) {
      return ddprun::InvalidArgumentError(std::string(variable->name) +
                                          " must be a number of seconds, not '" + *text + "'");
    }
    *field = *seconds;
  }
  if (options.timeout.count() == 0) {
    return ddprun::InvalidArgumentError("DDPRUN_TIMEOUT must be more than 0 seconds");
  }
  return options;
}

ddprun::Result<std::unique_ptr<ProcessGroup>> ProcessGroup::FromEnv() {
  ASSIGN_OR_RETURN(const Environment environment, Environment::FromProcess());
  ASSIGN_OR_RETURN(const ProcessGroupOptions options, OptionsFromEnvironment(environment));
  return Create(options);
}

ddprun::Result<std::unique_ptr<ProcessGroup>> ProcessGroup::Create(
    const ProcessGroupOptions& options) {
  if (options.store_address.empty() || options.job_id.empty()) {
    return ddprun::InvalidArgumentError(
        "a process group needs the store's address and the job id (DDPRUN_STORE_ADDR, "
        "DDPRUN_JOB_ID); run under ddprun");
  }
  ddprun::StoreClientOptions store;
  store.address = options.store_address;
  store.security = options.security;
  store.job_id = options.job_id;
  store.round = options.round;
  store.retry_timeout = options.store_retry;
  return Create(options, std::make_shared<RendezvousStore>(store));
}

ddprun::Result<std::unique_ptr<ProcessGroup>> ProcessGroup::Create(
    const ProcessGroupOptions& options, std::shared_ptr<Store> store) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return ddprun::InvalidArgumentError("rank " + std::to_string(options.rank) +
                                        " does not fit a world of " +
                                        std::to_string(options.world_size));
  }
  std::unique_ptr<ProcessGroup> group(new ProcessGroup(options));
  group->store_ = std::move(store);
  if (options.backend != "nccl") {  // every rank connects the CPU ring now, together
    ASSIGN_OR_RETURN(group->cpu_, CreateCommunicator(options, *group->store_, Device::kCpu));
  }
  progress_internal::GroupFormed();
  return group;
}

ProcessGroup::~ProcessGroup() { progress_internal::GroupDestroyed(); }

ddprun::Result<Communicator*> ProcessGroup::communicator(Device device) {
  if (device == Device::kCpu) {
    if (cpu_) return cpu_.get();
    return ddprun::FailedPreconditionError(
        "DDPRUN_BACKEND=nccl: this process group has no communicator for CPU tensors");
  }
  if (!cuda_) {
    ASSIGN_OR_RETURN(cuda_, CreateCommunicator(options_, *store_, device));
  }
  return cuda_.get();
}

}  // namespace ddp
