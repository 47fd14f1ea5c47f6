// StartRequestFor; see start_request.h.
#include "start_request.h"

namespace ddprun {
namespace {

v1::StartJobRequest::ProgramMode ProgramModeMessage(ProgramMode mode) {
  switch (mode) {
    case ProgramMode::kModule:
      return v1::StartJobRequest::PROGRAM_MODULE;
    case ProgramMode::kNoPython:
      return v1::StartJobRequest::PROGRAM_NO_PYTHON;
    case ProgramMode::kRunPath:
      return v1::StartJobRequest::PROGRAM_RUN_PATH;
    case ProgramMode::kAsTyped:
      break;
  }
  return v1::StartJobRequest::PROGRAM_AS_TYPED;
}

}  // namespace

v1::StartJobRequest StartRequestFor(const SubmitRequest& request,
                                    const std::vector<std::string>& hosts, size_t host,
                                    bool check_only) {
  v1::StartJobRequest start;
  start.set_job_id(request.job_id);
  start.set_submission_id(request.submission_id);
  for (const auto& name : hosts) start.add_hosts(name);
  start.set_host_index(static_cast<int>(host));
  for (const auto& arg : request.agent_args) start.add_agent_args(arg);
  start.add_agent_args("--rdzv_endpoint=" + request.agent_rendezvous);
  for (const auto& arg : request.program) start.add_program(arg);
  start.set_working_dir(request.working_dir);
  start.mutable_environment()->insert(request.environment.begin(), request.environment.end());
  start.set_check_only(check_only);
  start.set_program_mode(ProgramModeMessage(request.program_mode));
  start.set_shutdown_timeout_ms(request.shutdown_timeout.count());
  start.set_rendezvous_endpoint(request.agent_rendezvous);
  start.set_forward_input(request.forward_input);
  return start;
}

}  // namespace ddprun
