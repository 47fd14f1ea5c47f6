// The environment contract between ddprun and its workers, as one table: every variable ddprun's
// agent sets for a worker and every knob the runtime reads, with its meaning, who writes it and
// who reads it, and the default where it has one. The agent writes its variables by these names
// (agent/src/worker_environment.cc), every reader reads them by these names (the runtime's
// ddp::Environment and ProcessGroup, the store client), and docs/environment.md documents each
// one (a unit test checks both). It is a public interface: change it deliberately.
#pragma once

#include <array>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace ddprun::worker_env {

enum class Writer {
  kAgent,  // ddprun's agent sets it for every worker (over an inherited value unless noted)
  // The agent's supervisor sets it as it starts the worker: it owns the worker's log directory
  // and progress page (agent/src/worker_group_supervisor.cc)
  kSupervisor,
  kUser,  // the user may set it; the runtime reads it, with a default
};

struct Variable {
  const char* name;
  const char* meaning;
  Writer written_by;
  const char* read_by;        // who relies on it
  const char* default_value;  // a kUser variable's default; "" for the agent's
};

// torchrun's variables, with torchrun's meaning.
inline constexpr Variable kRank{"RANK", "the worker's global rank", Writer::kAgent,
                                "PyTorch, ddp::Environment", ""};
inline constexpr Variable kLocalRank{"LOCAL_RANK", "the worker's rank on its node", Writer::kAgent,
                                     "PyTorch, ddp::Environment", ""};
inline constexpr Variable kGroupRank{"GROUP_RANK", "the node's rank", Writer::kAgent,
                                     "PyTorch, ddp::Environment", ""};
inline constexpr Variable kRoleRank{"ROLE_RANK", "equal to RANK (one role)", Writer::kAgent,
                                    "PyTorch", ""};
inline constexpr Variable kRoleName{"ROLE_NAME", "--role", Writer::kAgent, "PyTorch", ""};
inline constexpr Variable kLocalWorldSize{"LOCAL_WORLD_SIZE", "workers on this node",
                                          Writer::kAgent, "PyTorch, ddp::Environment", ""};
inline constexpr Variable kWorldSize{"WORLD_SIZE", "workers in the job", Writer::kAgent,
                                     "PyTorch, ddp::Environment", ""};
inline constexpr Variable kGroupWorldSize{"GROUP_WORLD_SIZE", "nodes in this round", Writer::kAgent,
                                          "PyTorch", ""};
inline constexpr Variable kRoleWorldSize{"ROLE_WORLD_SIZE", "equal to WORLD_SIZE", Writer::kAgent,
                                         "PyTorch", ""};
inline constexpr Variable kMasterAddr{"MASTER_ADDR", "the address of group rank 0's node",
                                      Writer::kAgent, "PyTorch, ddp::Environment", ""};
inline constexpr Variable kMasterPort{"MASTER_PORT", "a port group rank 0's ddprun keeps bound",
                                      Writer::kAgent, "PyTorch, ddp::Environment", ""};
inline constexpr Variable kRestartCount{"TORCHELASTIC_RESTART_COUNT", "job-wide restarts so far",
                                        Writer::kAgent, "PyTorch, ddp::Environment, trainers", ""};
inline constexpr Variable kMaxRestarts{"TORCHELASTIC_MAX_RESTARTS", "--max_restarts",
                                       Writer::kAgent, "PyTorch", ""};
inline constexpr Variable kRunId{"TORCHELASTIC_RUN_ID", "--rdzv_id", Writer::kAgent, "PyTorch", ""};
inline constexpr Variable kErrorFile{"TORCHELASTIC_ERROR_FILE",
                                     "where the worker may write its error (@record)",
                                     Writer::kAgent, "PyTorch's @record", ""};
inline constexpr Variable kUseAgentStore{
    "TORCHELASTIC_USE_AGENT_STORE",
    "True: ddprun serves PyTorch's TCPStore at MASTER_ADDR:MASTER_PORT (one node); False: rank 0 "
    "hosts it",
    Writer::kAgent, "PyTorch", ""};
inline constexpr Variable kSignalsToHandle{"TORCHELASTIC_SIGNALS_TO_HANDLE",
                                           "the signals the agent forwards to its workers",
                                           Writer::kAgent, "PyTorch (torchrun 2.x sets it)", ""};
inline constexpr Variable kNcclAsyncErrorHandling{"TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                  "1, unless inherited", Writer::kAgent,
                                                  "PyTorch's NCCL process group", ""};
// The same setting under the name PyTorch before 2.2 reads (and its torchrun sets).
inline constexpr Variable kLegacyNcclAsyncErrorHandling{
    "NCCL_ASYNC_ERROR_HANDLING", "1, unless inherited", Writer::kAgent,
    "PyTorch's NCCL process group before 2.2", ""};
inline constexpr Variable kOmpNumThreads{"OMP_NUM_THREADS",
                                         "1 with several workers per node, unless inherited",
                                         Writer::kAgent, "OpenMP, OpenBLAS", ""};
inline constexpr Variable kCudaVisibleDevices{"CUDA_VISIBLE_DEVICES",
                                              "the worker's own GPU (--virtual_local_rank only)",
                                              Writer::kAgent, "CUDA", ""};
// Set for PyTorch's benefit.
inline constexpr Variable kGlooSocketIfname{"GLOO_SOCKET_IFNAME",
                                            "the interface holding DDPRUN_NODE_ADDR (multi-node, "
                                            "unless inherited)",
                                            Writer::kAgent, "PyTorch's Gloo", ""};
// ddprun's own.
inline constexpr Variable kStoreAddr{"DDPRUN_STORE_ADDR",
                                     "host:port of the rendezvous store (or a comma-separated "
                                     "list of daemons that share it through etcd)",
                                     Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kToken{"DDPRUN_TOKEN", "the token every store call carries",
                                 Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kTlsCa{"DDPRUN_TLS_CA", "the CA the store's certificate is checked with",
                                 Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kTlsCert{"DDPRUN_TLS_CERT", "the client certificate for the store",
                                   Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kTlsKey{"DDPRUN_TLS_KEY", "the client certificate's key", Writer::kAgent,
                                  "ddp::Environment, StoreClient", ""};
inline constexpr Variable kJobId{"DDPRUN_JOB_ID", "the job's id, which scopes the store",
                                 Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kRound{"DDPRUN_ROUND", "the round, which scopes the store",
                                 Writer::kAgent, "ddp::Environment, StoreClient", ""};
inline constexpr Variable kNodeAddr{"DDPRUN_NODE_ADDR", "this node's address for other nodes",
                                    Writer::kAgent, "ddp::ProcessGroup (the CPU ring)",
                                    "127.0.0.1"};
// Progress, for hang detection (--hang_timeout).
inline constexpr Variable kProgressFile{
    "DDPRUN_PROGRESS_FILE", "a file whose every write is a heartbeat; a number there is the step",
    Writer::kSupervisor, "any program (the language-neutral progress contract)", ""};
inline constexpr Variable kProgressFd{"DDPRUN_PROGRESS_FD",
                                      "the descriptor of the worker's progress page",
                                      Writer::kSupervisor, "ddp progress (ddp/progress.h)", ""};
inline constexpr Variable kPythonStacksDir{"DDPRUN_PYTHON_STACKS_DIR",
                                           "where ddprun's Python hook dumps Python stacks",
                                           Writer::kSupervisor, "ddprun's Python hook", ""};
inline constexpr Variable kPythonStacksSignal{"DDPRUN_PYTHON_STACKS_SIGNAL",
                                              "the signal that has them dumped",
                                              Writer::kSupervisor, "ddprun's Python hook", ""};
// The runtime's knobs.
inline constexpr Variable kBackend{"DDPRUN_BACKEND", "auto, cpu or nccl", Writer::kUser,
                                   "ddp::ProcessGroup", "auto"};
inline constexpr Variable kCpuTransport{"DDPRUN_CPU_TRANSPORT", "auto (shared memory) or tcp",
                                        Writer::kUser, "ddp::ProcessGroup", "auto"};
inline constexpr Variable kTimeout{"DDPRUN_TIMEOUT", "seconds a collective may take", Writer::kUser,
                                   "ddp::ProcessGroup", "600"};
inline constexpr Variable kStoreRetry{"DDPRUN_STORE_RETRY",
                                      "seconds a store call retries an unreachable server",
                                      Writer::kUser, "ddp::ProcessGroup", "60"};
inline constexpr Variable kBlasTune{"DDPRUN_BLAS_TUNE", "0 keeps OpenBLAS's own kernel choice",
                                    Writer::kUser, "the runtime's CPU layers", "1"};

inline constexpr std::array kAll = {&kRank,
                                    &kLocalRank,
                                    &kGroupRank,
                                    &kRoleRank,
                                    &kRoleName,
                                    &kLocalWorldSize,
                                    &kWorldSize,
                                    &kGroupWorldSize,
                                    &kRoleWorldSize,
                                    &kMasterAddr,
                                    &kMasterPort,
                                    &kRestartCount,
                                    &kMaxRestarts,
                                    &kRunId,
                                    &kErrorFile,
                                    &kUseAgentStore,
                                    &kSignalsToHandle,
                                    &kNcclAsyncErrorHandling,
                                    &kLegacyNcclAsyncErrorHandling,
                                    &kOmpNumThreads,
                                    &kCudaVisibleDevices,
                                    &kGlooSocketIfname,
                                    &kStoreAddr,
                                    &kToken,
                                    &kTlsCa,
                                    &kTlsCert,
                                    &kTlsKey,
                                    &kJobId,
                                    &kRound,
                                    &kNodeAddr,
                                    &kProgressFile,
                                    &kProgressFd,
                                    &kPythonStacksDir,
                                    &kPythonStacksSignal,
                                    &kBackend,
                                    &kCpuTransport,
                                    &kTimeout,
                                    &kStoreRetry,
                                    &kBlasTune};

// The variable's value in this process's environment; nullopt when it is unset or empty.
inline std::optional<std::string> Lookup(const Variable& variable) {
  const char* value = std::getenv(variable.name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// The contract's entry for `name`; nullptr when it has none.
inline const Variable* Find(std::string_view name) {
  for (const Variable* variable : kAll) {
    if (name == variable->name) return variable;
  }
  return nullptr;
}

}  // namespace ddprun::worker_env
