// JobService; see job_service.h.
#include "job_service.h"

#include <chrono>

#include "ddprun/base/logging.h"
#include "ddprun/rendezvous/call_authentication.h"
#include "ddprun/rendezvous/grpc_status.h"

namespace ddprun {
namespace {

constexpr size_t kAttachReadBytes = 256 << 10;
constexpr auto kAttachPoll = std::chrono::milliseconds(200);

ProgramMode ProgramModeOfMessage(v1::StartJobRequest::ProgramMode mode) {
  switch (mode) {
    case v1::StartJobRequest::PROGRAM_MODULE:
      return ProgramMode::kModule;
    case v1::StartJobRequest::PROGRAM_NO_PYTHON:
      return ProgramMode::kNoPython;
    case v1::StartJobRequest::PROGRAM_RUN_PATH:
      return ProgramMode::kRunPath;
    default:
      return ProgramMode::kAsTyped;
  }
}

JobStart JobStartOf(const v1::StartJobRequest& request, std::string submitter) {
  JobStart start;
  HostedJobDescription& job = start.description;
  job.job_id = request.job_id();
  job.hosts.assign(request.hosts().begin(), request.hosts().end());
  job.host_index = request.host_index();
  job.program.assign(request.program().begin(), request.program().end());
  job.working_dir = request.working_dir();
  job.submitter = std::move(submitter);
  job.start_time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  job.rendezvous = request.rendezvous_endpoint();
  start.agent_args.assign(request.agent_args().begin(), request.agent_args().end());
  start.environment.insert(request.environment().begin(), request.environment().end());
  start.program_mode = ProgramModeOfMessage(request.program_mode());
  start.shutdown_timeout = std::chrono::milliseconds(request.shutdown_timeout_ms());
  start.forward_input = request.forward_input();
  return start;
}

void SetExit(const AgentExit& exit, v1::AgentExit* out) {
  if (exit.term_signal != 0) {
    out->set_term_signal(exit.term_signal);
  } else {
    out->set_exit_code(exit.exit_code);
  }
  out->set_cancelled(exit.cancelled);
}

grpc::Status NoSuchJob(const std::string& job_id) {
  return {grpc::StatusCode::NOT_FOUND,
          "this daemon holds no job " + job_id + " (ddprun status lists the jobs it holds)"};
}

std::string ProgramLine(const std::vector<std::string>& program) {
  std::string line;
  for (const std::string& arg : program) line += (line.empty() ? "" : " ") + arg;
  return line;
}

}  // namespace

grpc::Status JobService::Start(grpc::ServerContext* context, const v1::StartJobRequest* request,
                               v1::StartJobResponse* response) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  const JobStart start = JobStartOf(*request, CallerIdentity(*context));
  auto log = GetLogger("daemon");
  response->set_shared_store(shared_.description);
  // Submissions of one job id to several daemons on one store: only one runs.
  const bool recorded = shared_.submissions != nullptr && !request->submission_id().empty();
  if (request->check_only()) {
    Status checked = table_.Check(start);
    if (checked.ok() && recorded) {
      checked = shared_.submissions->Check(request->job_id(), request->submission_id());
    }
    if (!checked.ok()) {
      log->info("job {} cannot start here, for {}: {}", start.description.job_id,
                start.description.submitter, checked.message());
    }
    return ToGrpcStatus(checked);
  }
  if (recorded) {
    if (Status held = shared_.submissions->Hold(request->job_id(), request->submission_id());
        !held.ok()) {
      log->warn("job {} did not start, for {}: {}", start.description.job_id,
                start.description.submitter, held.message());
      return ToGrpcStatus(held);
    }
  }
  auto job = table_.Start(start);
  if (!job.ok() && recorded) shared_.submissions->LetGo(request->job_id());
  if (!job.ok()) {
    log->warn("job {} did not start, for {}: {}", start.description.job_id,
              start.description.submitter, job.status().message());
    return ToGrpcStatus(job.status());
  }
  if (context->IsCancelled()) {
    // The submitter gave up waiting (and may have cancelled before the job existed here): a
    // start nobody will follow is undone.
    log->warn("job {} started after its submitter {} stopped waiting; cancelling it",
              start.description.job_id, start.description.submitter);
    table_.CancelAndWait(*job.value());
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the start came too late; the job was stopped"};
  }
  log->info("started job {} (host {} of {}) for {}: agent pid {}, in {}: {}",
            start.description.job_id, start.description.host_index + 1,
            start.description.hosts.size(), start.description.submitter, job.value()->agent_pid(),
            start.description.working_dir, ProgramLine(start.description.program));
  response->set_agent_pid(job.value()->agent_pid());
  return grpc::Status::OK;
}

grpc::Status JobService::Attach(grpc::ServerContext* context, const v1::AttachRequest* request,
                                grpc::ServerWriter<v1::JobOutput>* writer) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  std::shared_ptr<HostedJob> job = table_.Find(request->job_id());
  if (!job) return NoSuchJob(request->job_id());
  int64_t from = 0;
  std::optional<int64_t> stop_at;  // without follow: the end of what existed when asked
  while (!context->IsCancelled()) {
    HostedJobRead read =
        job->Read(from, kAttachReadBytes, std::chrono::steady_clock::now() + kAttachPoll);
    if (!request->follow() && !stop_at) stop_at = read.end;
    v1::JobOutput message;
    if (read.output.dropped > 0) {
      message.set_dropped_bytes(read.output.dropped);
      if (!writer->Write(message)) return grpc::Status::OK;  // the caller is gone
    }
    for (OutputPiece& piece : read.output.pieces) {
      auto* chunk = message.mutable_chunk();
      chunk->set_stream(piece.stream == OutputStream::kStdout ? v1::JobOutput::STDOUT
                                                              : v1::JobOutput::STDERR);
      chunk->set_data(std::move(piece.data));
      if (!writer->Write(message)) return grpc::Status::OK;
    }
    from = read.output.next;
    const bool all_read = from >= read.end;
    if (read.exit && all_read) {
      SetExit(*read.exit, message.mutable_ended());
      writer->Write(message);
      return grpc::Status::OK;
    }
    if (stop_at && from >= *stop_at) return grpc::Status::OK;
  }
  return grpc::Status::OK;
}

grpc::Status JobService::Cancel(grpc::ServerContext* context, const v1::CancelJobRequest* request,
                                v1::CancelJobResponse* response) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  std::shared_ptr<HostedJob> job = table_.Find(request->job_id());
  if (!job) return NoSuchJob(request->job_id());
  if (!job->exit()) {
    GetLogger("daemon")->info("cancelling job {} for {}", request->job_id(),
                              CallerIdentity(*context));
  }
  if (request->no_wait()) {
    job->Cancel(job->description().cancel_grace);
    if (auto exit = job->exit()) SetExit(*exit, response->mutable_exit());
    return grpc::Status::OK;
  }
  SetExit(table_.CancelAndWait(*job), response->mutable_exit());
  return grpc::Status::OK;
}

grpc::Status JobService::Input(grpc::ServerContext* context,
                               grpc::ServerReader<v1::InputChunk>* reader, v1::InputResponse*) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  v1::InputChunk chunk;
  if (!reader->Read(&chunk)) return grpc::Status::OK;  // no input at all
  std::shared_ptr<HostedJob> job = table_.Find(chunk.job_id());
  if (!job) return NoSuchJob(chunk.job_id());
  if (!job->ClaimInput()) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "job " + chunk.job_id() + " takes no input here (started without it, or taken)"};
  }
  do {
    if (!job->WriteInput(chunk.data()).ok()) break;  // the agent has gone: the rest is dropped
  } while (reader->Read(&chunk));
  // The end of the submitter's input, or of the submitter: the agent sees end of file.
  job->CloseInput();
  return grpc::Status::OK;
}

grpc::Status JobService::ResizeTerminal(grpc::ServerContext* context,
                                        const v1::ResizeTerminalRequest* request,
                                        v1::ResizeTerminalResponse*) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  if (request->rows() < 1 || request->rows() > 10000 || request->cols() < 1 ||
      request->cols() > 10000) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "a terminal size is 1 to 10000 rows and columns, not " +
                std::to_string(request->rows()) + "x" + std::to_string(request->cols())};
  }
  std::shared_ptr<HostedJob> job = table_.Find(request->job_id());
  if (!job) return NoSuchJob(request->job_id());
  return ToGrpcStatus(job->ResizeTerminal({static_cast<unsigned short>(request->rows()),
                                           static_cast<unsigned short>(request->cols())}));
}

grpc::Status JobService::List(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                              v1::ListJobsResponse* response) {
  if (auto auth = AuthenticateCall(*context, token_); !auth.ok()) return auth;
  for (const auto& job : table_.All()) {
    const HostedJobDescription& d = job->description();
    if (!request->job_id().empty() && d.job_id != request->job_id()) continue;
    v1::HostedJob* out = response->add_jobs();
    out->set_job_id(d.job_id);
    for (const auto& host : d.hosts) out->add_hosts(host);
    out->set_host_index(d.host_index);
    for (const auto& arg : d.program) out->add_program(arg);
    out->set_working_dir(d.working_dir);
    out->set_submitter(d.submitter);
    out->set_rendezvous(d.rendezvous);
    out->set_start_time_unix_ms(d.start_time_unix_ms);
    out->set_agent_pid(job->agent_pid());
    const auto exit = job->exit();
    out->set_state(exit ? "ended" : "running");
    if (exit) SetExit(*exit, out->mutable_exit());
  }
  if (!request->job_id().empty() && response->jobs().empty()) return NoSuchJob(request->job_id());
  return grpc::Status::OK;
}

}  // namespace ddprun
