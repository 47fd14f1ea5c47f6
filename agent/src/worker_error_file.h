// What a worker left in its TORCHELASTIC_ERROR_FILE, unpacked for the failure report.
// PyTorch's `@record` writes {"message": {"message": "<Type>: <msg>", "extraInfo":
// {"py_callstack": "<traceback>", "timestamp": "<epoch>"}}}; any other content is shown as it is.
#pragma once

#include <string>

namespace ddprun {

struct WorkerError {
  std::string message;    // "ValueError: the loss is NaN"; empty when the format is unknown
  std::string traceback;  // the Python call stack, when the worker recorded one
  std::string raw;        // the file's text (what is shown when message is empty)
};

// Parses `text` (the file's content). Never fails: unknown or malformed content lands in `raw`.
WorkerError ParseWorkerErrorFile(const std::string& text);

}  // namespace ddprun
