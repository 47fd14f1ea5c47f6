// The load generator's report: markdown tables of the good clients' service in the baseline and
// the mix, every class's outcomes, the absurd joins' answers, and the probes' memory figures.
#pragma once

#include "load_options.h"
#include "load_run.h"
#include "probes.h"

namespace ddprun::daemon_load {

void PrintReport(const Options& options, const ProbeFigures& probes, Clients& clients,
                 const LoadFigures& load);

}  // namespace ddprun::daemon_load
