// The live page of a rendezvous server's jobs (monitoring/page/live.html and live.js, embedded
// in the binary at build time): static HTML and a small script of its own that polls the JSON
// of /api/jobs and plots each rank's step and pace. No external fetch, no build step.
#pragma once

#include <string_view>

namespace ddprun {

std::string_view LivePageHtml();
std::string_view LivePageScript();

}  // namespace ddprun
