// The worker's error file (TORCHELASTIC_ERROR_FILE, written by the worker, so anything) as the
// agent unpacks it for the failure report. It never fails; whatever it cannot read stays in
// `raw`, which must then be the file's text.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "worker_error_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(ddprun::fuzz::AsText(data, size));
  const ddprun::WorkerError error = ddprun::ParseWorkerErrorFile(text);
  if (error.message.empty() && error.raw != text) {
    std::fprintf(stderr, "fuzz: an unreadable error file whose text was not kept as it is\n");
    std::abort();
  }
  return 0;
}
