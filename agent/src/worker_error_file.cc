// ParseWorkerErrorFile; see worker_error_file.h. The JSON is read by the project's own strict
// reader (ddprun/base/json_reader.h), so that the launcher links no Protobuf for it.
#include "worker_error_file.h"

#include "ddprun/base/json_reader.h"

namespace ddprun {

WorkerError ParseWorkerErrorFile(const std::string& text) {
  WorkerError error;
  error.raw = text;
  // Any document but an object (and anything that is not JSON) has no "message": it stays raw.
  const std::optional<JsonValue> document = ParseJson(text);
  if (!document) return error;
  if (const std::string* plain = document->StringAt("message")) {  // {"message": "..."}
    error.message = *plain;
    return error;
  }
  const JsonValue* outer = document->ObjectAt("message");
  if (outer == nullptr) return error;
  const std::string* message = outer->StringAt("message");
  if (message == nullptr) return error;
  error.message = *message;
  if (const JsonValue* extra = outer->ObjectAt("extraInfo")) {
    if (const std::string* stack = extra->StringAt("py_callstack")) error.traceback = *stack;
  }
  return error;
}

}  // namespace ddprun
