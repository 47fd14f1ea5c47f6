// ExpandHostlist: Slurm's compact host lists ("node[01-04,07],gpu[1-2]-ib[0-1]") as the names
// they stand for, in Slurm's order, without scontrol (which a job's container often lacks). The
// grammar is what `scontrol show hostnames` accepts (the tests hold the two side by side):
// - names are separated by commas or white space outside brackets;
// - a name is text and bracket groups; a group is a comma list of numbers and ranges LO-HI
//   (LO <= HI); the names are every combination, the first group varying slowest;
// - a number is as wide as LO when LO has a leading zero ("n[098-101]": n098 .. n101;
//   "n[1-010]": n1 .. n10);
// - text after a name's last group is refused ("a[1-2]b"), as Slurm refuses it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

// More names than this, or names longer than this in all, is refused before any is made (a
// long text times many numbers would otherwise take gigabytes).
inline constexpr size_t kMaxHostlistNames = 1 << 20;
inline constexpr size_t kMaxHostlistBytes = 32 << 20;

// INVALID_ARGUMENT naming what is wrong: an unbalanced bracket, an empty or reversed range, a
// range that is not numbers, text after the last group, no names at all, or too many.
Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist);

}  // namespace ddprun
