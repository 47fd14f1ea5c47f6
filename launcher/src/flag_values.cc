// Flag values; see flag_values.h.
#include "flag_values.h"

#include <cstdlib>
#include <optional>

#include "ddprun/base/hex.h"
#include "ddprun/base/parsing.h"

namespace ddprun {

Status ResolveNnodes(const std::string& text, LaunchConfig& config) {
  const auto colon = text.find(':');
  auto min_nodes = ParseInteger<int>(text.substr(0, colon));
  auto max_nodes =
      colon == std::string::npos ? min_nodes : ParseInteger<int>(text.substr(colon + 1));
  if (!min_nodes || !max_nodes || *min_nodes < 1 || *max_nodes < *min_nodes) {
    return InvalidArgumentError("--nnodes must be N or MIN:MAX with 1 <= MIN <= MAX, not '" + text +
                                "'");
  }
  config.min_nodes = *min_nodes;
  config.max_nodes = *max_nodes;
  return Status::Ok();
}

Result<PerRankStreams> ParsePerRankStreams(const std::string& flag, const std::string& text) {
  auto streams_of = [](const std::string& value) -> std::optional<StdStreams> {
    auto number = ParseInteger<int>(value);
    if (!number || *number < 0 || *number > 3) return std::nullopt;
    return static_cast<StdStreams>(*number);
  };
  const std::string usage = flag +
                            " must be 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a map "
                            "like 0:1,1:2 from local rank to those, not '" +
                            text + "'";
  PerRankStreams result;
  if (text.find(':') == std::string::npos) {
    auto all = streams_of(text);
    if (!all) return InvalidArgumentError(usage);
    result.all = *all;
    return result;
  }
  for (const std::string& item : SplitCommas(text)) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) return InvalidArgumentError(usage);
    auto rank = ParseInteger<int>(item.substr(0, colon));
    auto streams = streams_of(item.substr(colon + 1));
    if (!rank || *rank < 0 || !streams) return InvalidArgumentError(usage);
    result.by_local_rank[*rank] = *streams;
  }
  return result;
}

Result<std::set<int>> ParseRankList(const std::string& text, int nproc) {
  std::set<int> ranks;
  for (const std::string& item : SplitCommas(text)) {
    auto rank = ParseInteger<int>(item);
    if (!rank || *rank < 0 || *rank >= nproc) {
      return InvalidArgumentError("--local_ranks_filter must list local ranks from 0 to " +
                                  std::to_string(nproc - 1) + " separated by commas, not '" + text +
                                  "'");
    }
    ranks.insert(*rank);
  }
  return ranks;
}

std::string RandomRunId() {
  unsigned char bytes[16];
  arc4random_buf(bytes, sizeof(bytes));
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  return HexEncode(bytes, 4) + "-" + HexEncode(bytes + 4, 2) + "-" + HexEncode(bytes + 6, 2) + "-" +
         HexEncode(bytes + 8, 2) + "-" + HexEncode(bytes + 10, 6);
}

}  // namespace ddprun
