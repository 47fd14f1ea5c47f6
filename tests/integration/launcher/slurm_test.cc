// ddprun under a real Slurm: Debian's munged, slurmctld and slurmd, started here for this test (a
// cluster of this one host, its configuration and state in a scratch directory, on ports of its
// own), and `srun -N1 --ntasks-per-node=1 ddprun ...` with no rendezvous flags
// at all. Skipped, with the reason, where Slurm is not installed or the test is not root (slurmd
// must be).
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/launcher/launcher_test_support.h"
#include "support/skip.h"
#include "support/test_paths.h"

using namespace ddprun::testing;

namespace {

const std::string kTrainExample = paths::kTrainExample;

// The first of two ports for Slurm's daemons, which bind the ports their configuration names:
// below the kernel's ephemeral range, which no bind to port 0 is ever given, so no socket can take
// them between now and the daemons' binds (as a port probed free and closed could be), and picked
// by the pid, so that two runs of this test apart do not share them.
int SlurmPorts() { return 22000 + 2 * (::getpid() % 4000); }

// A one-host Slurm cluster of this test's own: munged, slurmctld and slurmd in the foreground,
// the test's children, stopped with SIGTERM (then SIGKILL) at the end.
class SlurmCluster {
 public:
  // nullopt after SkipTest, saying why, where it cannot run here.
  static std::unique_ptr<SlurmCluster> StartOrSkip() {
    if (::geteuid() != 0) {
      SkipTest("slurmd must run as root, and this test is not");
      return nullptr;
    }
    for (const char* program :
         {"munged", "slurmctld", "slurmd", "srun", "sinfo", "squeue", "scancel"}) {
      if (FindOnPath(program).empty()) {
        SkipTest(std::string("Debian's Slurm (slurm-wlm, munge) is not installed here: no ") +
                 program);
        return nullptr;
      }
    }
    auto cluster = std::unique_ptr<SlurmCluster>(new SlurmCluster());
    if (!cluster->AwaitIdle()) {
      FAIL("the test's Slurm node did not become idle: " << cluster->Logs());
    }
    return cluster;
  }

  // Cancels every job first (their slurmstepd and tasks end with them), then stops the daemons.
  ~SlurmCluster() {
    (void)Run({Which("scancel"), "--full", "--signal=KILL", "--state=RUNNING", "-u", "root"},
              env());
    (void)Run({Which("scancel"), "-u", "root"}, env());
    for (int i = 0; i < 100; ++i) {
      auto queue = Run({Which("squeue"), "-h", "-o", "%i"}, env());
      if (queue.code() != 0 || Lines(queue.out).empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
      (*it)->Signal(SIGTERM);
      (*it)->Wait(std::chrono::seconds(15));
    }
  }

  // Slurm's clients find the cluster through this.
  std::map<std::string, std::string> env() const { return {{"SLURM_CONF", dir_ / "slurm.conf"}}; }
  std::string Which(const std::string& program) const { return FindOnPath(program); }
  const std::string& host() const { return host_; }
  std::string Logs() const {
    return ReadFile(dir_ / "slurmctld.log") + ReadFile(dir_ / "slurmd.log") +
           ReadFile(dir_ / "munged.log");
  }

 private:
  SlurmCluster() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    host_ = std::string(name).substr(0, std::string(name).find('.'));
    std::filesystem::create_directories(dir_ / "state");
    std::filesystem::create_directories(dir_ / "spool");
    // munged wants its key readable by it alone, and a socket directory others can enter.
    {
      std::ofstream key(dir_ / "munge.key", std::ios::binary);
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::vector<char> bytes(1024);
      random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      key.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    std::filesystem::permissions(dir_ / "munge.key", std::filesystem::perms::owner_read);
    std::ofstream(dir_ / "slurm.conf")
        << "ClusterName=ddprun-test\n"
        << "SlurmctldHost=" << host_ << "(127.0.0.1)\n"
        << "SlurmctldPort=" << SlurmPorts() << "\nSlurmdPort=" << SlurmPorts() + 1 << "\n"
        << "SlurmUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
        << "AuthInfo=socket=" << (dir_ / "munge.socket") << "\n"
        << "StateSaveLocation=" << (dir_ / "state") << "\nSlurmdSpoolDir=" << (dir_ / "spool")
        << "\nSlurmctldPidFile=" << (dir_ / "slurmctld.pid")
        << "\nSlurmdPidFile=" << (dir_ / "slurmd.pid")
        << "\nSlurmctldLogFile=" << (dir_ / "slurmctld.log")
        << "\nSlurmdLogFile=" << (dir_ / "slurmd.log") << "\n"
        << "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSelectType=select/linear\n"
        << "SchedulerType=sched/builtin\nMpiDefault=none\nReturnToService=2\n"
        << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
        << "NodeName=" << host_
        << " NodeAddr=127.0.0.1 CPUs=" << std::thread::hardware_concurrency()
        << " State=UNKNOWN\nPartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    const std::string conf = dir_ / "slurm.conf";
    Start({Which("munged"), "--foreground", "--force", "--key-file=" + (dir_ / "munge.key"),
           "--socket=" + (dir_ / "munge.socket"), "--pid-file=" + (dir_ / "munged.pid"),
           "--log-file=" + (dir_ / "munged.log"), "--seed-file=" + (dir_ / "munged.seed")});
    // Its socket before the others start, which connect to it at once.
    for (int i = 0; i < 100 && !std::filesystem::exists(dir_ / "munge.socket"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Start({Which("slurmctld"), "-D", "-f", conf});
    Start({Which("slurmd"), "-D", "-f", conf, "-N", host_});
  }

  void Start(const std::vector<std::string>& argv) {
    daemons_.push_back(std::make_unique<ChildProcess>(argv, env()));
  }

  // Whether sinfo shows the node idle within 30 s.
  bool AwaitIdle() const {
    for (int i = 0; i < 150; ++i) {
      auto state = Run({Which("sinfo"), "-h", "-o", "%T"}, env());
      if (state.code() == 0 && Lines(state.out) == std::vector<std::string>{"idle"}) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  ScratchDir dir_;
  std::string host_;
  std::vector<std::unique_ptr<ChildProcess>> daemons_;
};

void TrainsFromTheStep(const SlurmCluster& cluster_ref) {
  const SlurmCluster* cluster = &cluster_ref;
  auto env = cluster->env();
  env["DDPRUN_LOG_LEVEL"] = "info";
  // Two workers a node from --nproc_per_node (no GPUs to take it from); every rendezvous flag
  // from the step.
  auto result = Run({cluster->Which("srun"), "-N1", "--ntasks-per-node=1", kDdprun,
                     "--nproc_per_node=2", kTrainExample, "--epochs", "1"},
                    env, std::chrono::seconds(90));
  INFO(result.out << result.err << cluster->Logs());
  REQUIRE(result.code() == 0);
  CHECK(Count(result.out, "[rank0]: held-out loss ") == 1);  // the trainer ran to its end
  CHECK(Count(result.out, "[rank0]: epoch 0 step 128/128") == 1);
  // One banner line: each derived value and where it came from.
  CHECK(Count(result.err,
              ", step 0: --nnodes=1 (SLURM_STEP_NUM_NODES) --node_rank=0 "
              "(SLURM_NODEID) --rdzv_endpoint=") == 1);
  CHECK(Count(result.err, " (the first node of SLURM_STEP_NODELIST=") == 1);
  CHECK(Count(result.err, "--rdzv_id=slurm-") == 1);

  // A failure's report says which Slurm job and step it was.
  auto failed = Run({cluster->Which("srun"), "-N1", "--ntasks-per-node=1", kDdprun,
                     "--nproc_per_node=2", kTestWorker, "exit", "1", "3"},
                    cluster->env(), std::chrono::seconds(60));
  INFO(failed.err);
  CHECK(failed.code() == 3);
  CHECK(Count(failed.err, "exit 1 3 [Slurm job ") == 1);
  CHECK(Count(failed.err, ", step 0] FAILED") == 1);

  // Two tasks on the node: refused with the hint, before anything starts.
  auto two =
      Run({cluster->Which("srun"), "-N1", "--ntasks-per-node=2", kDdprun, kTestWorker, "env"},
          cluster->env(), std::chrono::seconds(60));
  CHECK(two.code() != 0);
  CHECK(Count(two.err, "runs 2 tasks on a node") == 2);
  CHECK(Count(two.err, "srun --ntasks-per-node=1") == 2);
  CHECK(Count(two.out, "RANK=") == 0);
}

void ForwardsScancelSignals(const SlurmCluster& cluster_ref) {
  const SlurmCluster* cluster = &cluster_ref;
  ChildProcess srun({cluster->Which("srun"), "-N1", "--ntasks-per-node=1", "--job-name=usr1",
                     kDdprun, "--nproc_per_node=2", "--no_python", "/bin/sh", "-c",
                     "trap 'echo got USR1' USR1; echo ready; i=0; while [ $i -lt 100 ]; do "
                     "sleep 0.05; i=$((i+1)); done; echo finished"},
                    cluster->env());
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(srun.WaitForStdoutLine(
        [](const std::string& line) { return line.find("]: ready") != std::string::npos; }));
  }
  auto job = Run({cluster->Which("squeue"), "-h", "-n", "usr1", "-o", "%i"}, cluster->env());
  REQUIRE(job.code() == 0);
  REQUIRE(Lines(job.out).size() == 1);
  const std::string job_id = Lines(job.out).front();
  // ddprun status names the Slurm job and step (the rendezvous is on the step's first node).
  const int port = 29400 + (std::stoi(job_id) * 10) % 1000;  // step 0's (slurm_step.h)
  auto status =
      Run(Ddprun({"status", "--rdzv_endpoint=" + cluster->host() + ":" + std::to_string(port),
                  "--rdzv_id=slurm-" + job_id + ".0"}));
  INFO(status.out << status.err);
  CHECK(Count(status.out, "job slurm-" + job_id + ".0: running") == 1);
  CHECK(Count(status.out, "run by: Slurm job " + job_id + ", step 0") == 1);
  auto scancel = Run({cluster->Which("scancel"), "--signal=USR1", job_id}, cluster->env());
  CHECK(scancel.code() == 0);
  auto exit = srun.Wait(std::chrono::seconds(60));
  INFO(srun.stdout_text() << srun.stderr_text() << cluster->Logs());
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  for (int rank = 0; rank < 2; ++rank) {
    auto lines = RankLines(srun.stdout_text(), rank);
    CHECK(std::count(lines.begin(), lines.end(), "got USR1") == 1);
    CHECK(std::count(lines.begin(), lines.end(), "finished") == 1);
  }
}

}  // namespace

// One test case, one cluster: two at once on one host would share the node's name (and its
// first job's id, and so its rendezvous port).
TEST_CASE(
    "under a real Slurm, srun ddprun with no flags trains, and scancel --signal=USR1 "
    "reaches every worker") {
  auto cluster = SlurmCluster::StartOrSkip();
  if (!cluster) return;
  TrainsFromTheStep(*cluster);
  ForwardsScancelSignals(*cluster);
}
