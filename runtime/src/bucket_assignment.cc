// AssignBuckets; see bucket_assignment.h.
#include "ddp/bucket_assignment.h"

#include <map>
#include <tuple>

namespace ddp {

std::vector<std::vector<size_t>> AssignBuckets(const std::vector<ParameterSpec>& parameters,
                                               size_t first_bucket_bytes, size_t bucket_bytes) {
  using Key = std::tuple<DataType, Device, int>;
  struct Open {
    std::vector<size_t> indices;
    size_t bytes = 0;
    bool first_closed = false;  // after its first bucket, a group uses the cap
  };
  std::map<Key, Open> open;
  std::vector<Key> key_order;  // groups in the order they first appeared
  std::vector<std::vector<size_t>> buckets;
  for (size_t i = parameters.size(); i-- > 0;) {
    const ParameterSpec& p = parameters[i];
    const Key key{p.type, p.device, p.device_index};
    auto [it, inserted] = open.try_emplace(key);
    if (inserted) key_order.push_back(key);
    Open& bucket = it->second;
    bucket.indices.push_back(i);
    bucket.bytes += p.count * SizeOf(p.type);
    const size_t limit = bucket.first_closed ? bucket_bytes : first_bucket_bytes;
    if (bucket.bytes >= limit) {
      buckets.push_back(std::move(bucket.indices));
      bucket.indices.clear();
      bucket.bytes = 0;
      bucket.first_closed = true;
    }
  }
  for (const Key& key : key_order) {
    if (!open[key].indices.empty()) buckets.push_back(std::move(open[key].indices));
  }
  return buckets;
}

}  // namespace ddp
