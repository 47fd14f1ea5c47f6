// JobsAsStatusJson (status_json.h): `ddprun status --json` whole, and the live page's poll
// abridged so that it stays small however large the job.
#include "ddprun/rendezvous/status_json.h"

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// A running job of `nodes` nodes of `per_node` ranks; rank i at step 1000 + i but ranks 50 to 69,
// which lag at step i; rank 7 hung, rank 300 a straggler.
JobSnapshot Job(const std::string& id, int nodes, int per_node) {
  JobSnapshot job;
  job.job_id = id;
  job.state = "running";
  for (int n = 0; n < nodes; ++n) {
    NodeSnapshot node;
    node.description = {"node-" + std::to_string(n), "host-" + std::to_string(n), per_node};
    node.group_rank = n;
    node.first_global_rank = n * per_node;
    for (int local = 0; local < per_node; ++local) {
      RankProgress rank;
      rank.global_rank = n * per_node + local;
      rank.local_rank = local;
      rank.step = rank.global_rank >= 50 && rank.global_rank < 70 ? rank.global_rank
                                                                  : 1000 + rank.global_rank;
      rank.hung = rank.global_rank == 7;
      rank.straggler = rank.global_rank == 300;
      node.progress.push_back(rank);
    }
    job.nodes.push_back(node);
  }
  return job;
}

}  // namespace

TEST_CASE("the status JSON is whole, with the job's counts, for ddprun status --json") {
  const std::string json = JobsAsStatusJson({Job("big", 4, 100), Job("other", 2, 3)});
  CHECK(Count(json, "\"global_rank\"") == 406);
  CHECK(Count(json, "\"node_id\"") == 6);
  CHECK(Count(json, "\"node_count\": 4") == 1);
  CHECK(Count(json, "\"worker_count\": 400") == 1);
  CHECK(Count(json, "\"ranks_reporting\": 400") == 1);
  CHECK(Count(json, "\"abridged\": false") == 2);
}

TEST_CASE("the page's poll holds one job's nodes, and of a large one the ranks worth a look") {
  const std::string json =
      JobsAsStatusJson({Job("big", 4, 100), Job("other", 2, 3)}, PageAbridgement{"big"});
  // Of 400 ranks: the hung one, the straggler, and the 16 furthest behind (ranks 50 to 65).
  CHECK(Count(json, "\"global_rank\"") == 18);
  CHECK(Count(json, "\"global_rank\": 7,") == 1);
  CHECK(Count(json, "\"global_rank\": 300,") == 1);
  CHECK(Count(json, "\"global_rank\": 50,") == 1);
  CHECK(Count(json, "\"global_rank\": 65,") == 1);
  CHECK(Count(json, "\"global_rank\": 66,") == 0);
  CHECK(Count(json, "\"global_rank\": 0,") == 0);
  // Nodes 0 (ranks 7 and 50 to 65) and 3 (rank 300) hold them; nodes 1 and 2 are left out.
  CHECK(Count(json, "\"node_id\"") == 2);
  CHECK(Count(json, "\"node_count\": 4") == 1);
  CHECK(Count(json, "\"ranks_reporting\": 400") == 1);
  // The other job: counts only.
  CHECK(Count(json, "\"node_count\": 2") == 1);
  CHECK(Count(json, "\"abridged\": true") == 2);

  // A job of at most PageAbridgement::kMaxPageRanks ranks is sent whole.
  const std::string small = JobsAsStatusJson({Job("small", 2, 100)}, PageAbridgement{"small"});
  CHECK(Count(small, "\"global_rank\"") == 200);
  CHECK(Count(small, "\"abridged\": false") == 1);
}
