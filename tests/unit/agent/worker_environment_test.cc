// The environment each worker gets.
#include "ddprun/agent/worker_environment.h"

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

JobEnvironment Job() {
  JobEnvironment job;
  job.role = "trainer";
  job.run_id = "job7";
  job.master_addr = "10.1.2.3";
  job.master_port = 29500;
  job.restart_count = 2;
  job.max_restarts = 3;
  job.store_address = "127.0.0.1:4000";
  job.store_token = "secret";
  job.round = 2;
  return job;
}

}  // namespace

TEST_CASE("the environment carries torchrun's variables for the worker's placement") {
  WorkerPlacement placement{1, 5, 1, 4, 8, 2};
  auto env = BuildWorkerEnvironment({{"PATH", "/bin"}}, Job(), placement, "/logs/error.json");
  CHECK(env["LOCAL_RANK"] == "1");
  CHECK(env["RANK"] == "5");
  CHECK(env["GROUP_RANK"] == "1");
  CHECK(env["ROLE_RANK"] == "5");
  CHECK(env["ROLE_NAME"] == "trainer");
  CHECK(env["LOCAL_WORLD_SIZE"] == "4");
  CHECK(env["WORLD_SIZE"] == "8");
  CHECK(env["GROUP_WORLD_SIZE"] == "2");
  CHECK(env["ROLE_WORLD_SIZE"] == "8");
  CHECK(env["MASTER_ADDR"] == "10.1.2.3");
  CHECK(env["MASTER_PORT"] == "29500");
  CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "2");
  CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "3");
  CHECK(env["TORCHELASTIC_RUN_ID"] == "job7");
  CHECK(env["TORCHELASTIC_ERROR_FILE"] == "/logs/error.json");
  CHECK(env["DDPRUN_STORE_ADDR"] == "127.0.0.1:4000");
  CHECK(env["DDPRUN_TOKEN"] == "secret");
  CHECK(env["DDPRUN_JOB_ID"] == "job7");
  CHECK(env["DDPRUN_ROUND"] == "2");
  CHECK(env["PATH"] == "/bin");
}

TEST_CASE("OMP_NUM_THREADS is 1 for several workers unless the user set it") {
  WorkerPlacement several{0, 0, 0, 2, 2, 1};
  WorkerPlacement single{0, 0, 0, 1, 1, 1};
  CHECK(BuildWorkerEnvironment({}, Job(), several, "e")["OMP_NUM_THREADS"] == "1");
  CHECK_FALSE(BuildWorkerEnvironment({}, Job(), single, "e").contains("OMP_NUM_THREADS"));
  CHECK(BuildWorkerEnvironment({{"OMP_NUM_THREADS", "8"}}, Job(), several,
                               "e")["OMP_NUM_THREADS"] == "8");
}

TEST_CASE("the contract's variables override stale inherited ones") {
  WorkerPlacement placement{0, 0, 0, 1, 1, 1};
  auto env = BuildWorkerEnvironment({{"RANK", "99"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}},
                                    Job(), placement, "e");
  CHECK(env["RANK"] == "0");
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0");  // the user's choice is kept
  CHECK(env["NCCL_ASYNC_ERROR_HANDLING"] == "1");        // each name on its own
}

TEST_CASE(
    "both names of NCCL's asynchronous error handling are set, each only when not inherited") {
  WorkerPlacement placement{0, 0, 0, 1, 1, 1};
  auto fresh = BuildWorkerEnvironment({}, Job(), placement, "e");
  CHECK(fresh["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
  CHECK(fresh["NCCL_ASYNC_ERROR_HANDLING"] == "1");  // what torch before 2.2 reads
  auto older = BuildWorkerEnvironment({{"NCCL_ASYNC_ERROR_HANDLING", "0"}}, Job(), placement, "e");
  CHECK(older["NCCL_ASYNC_ERROR_HANDLING"] == "0");
  CHECK(older["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
}

TEST_CASE("ToEnvp renders KEY=VALUE strings") {
  CHECK(ToEnvp({{"A", "1"}, {"B", "x=y"}}) == std::vector<std::string>{"A=1", "B=x=y"});
}

TEST_CASE("with a virtual local rank, LOCAL_RANK is 0 and each worker sees only its own GPU") {
  JobEnvironment job = Job();
  job.virtual_local_rank = true;
  WorkerPlacement third{2, 6, 1, 4, 8, 2};
  auto plain = BuildWorkerEnvironment({}, job, third, "e");
  CHECK(plain["LOCAL_RANK"] == "0");
  CHECK(plain["RANK"] == "6");
  CHECK(plain["CUDA_VISIBLE_DEVICES"] == "2");
  // The local-rank-th of the devices the agent was given.
  auto sliced = BuildWorkerEnvironment({{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}, job, third, "e");
  CHECK(sliced["CUDA_VISIBLE_DEVICES"] == "6");
}

TEST_CASE("Gloo is pointed at the node's interface unless the user chose one") {
  JobEnvironment job = Job();
  job.node_interface = "eth1";
  WorkerPlacement placement{0, 0, 0, 1, 2, 2};
  CHECK(BuildWorkerEnvironment({}, job, placement, "e")["GLOO_SOCKET_IFNAME"] == "eth1");
  CHECK(BuildWorkerEnvironment({{"GLOO_SOCKET_IFNAME", "ib0"}}, job, placement,
                               "e")["GLOO_SOCKET_IFNAME"] == "ib0");
  CHECK_FALSE(BuildWorkerEnvironment({}, Job(), placement, "e").contains("GLOO_SOCKET_IFNAME"));
}
