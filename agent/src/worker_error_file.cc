// ParseWorkerErrorFile; see worker_error_file.h. The JSON is read by protobuf's JSON parser into
// a google.protobuf.Struct (protobuf is linked already), not by a reader of our own.
#include "worker_error_file.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace ddprun {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// The string at `key` of `object`, or nullptr when absent or not a string.
const std::string* StringField(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end() || it->second.kind_case() != Value::kStringValue) {
    return nullptr;
  }
  return &it->second.string_value();
}

// The object at `key` of `object`, or nullptr when absent or not an object.
const Struct* ObjectField(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end() || it->second.kind_case() != Value::kStructValue) {
    return nullptr;
  }
  return &it->second.struct_value();
}

}  // namespace

WorkerError ParseWorkerErrorFile(const std::string& text) {
  WorkerError error;
  error.raw = text;
  Struct document;  // a JSON object; any other document fails to parse
  if (!google::protobuf::util::JsonStringToMessage(text, &document).ok()) return error;
  if (const std::string* plain = StringField(document, "message")) {  // {"message": "..."}
    error.message = *plain;
    return error;
  }
  const Struct* outer = ObjectField(document, "message");
  if (outer == nullptr) return error;
  const std::string* message = StringField(*outer, "message");
  if (message == nullptr) return error;
  error.message = *message;
  if (const Struct* extra = ObjectField(*outer, "extraInfo")) {
    if (const std::string* stack = StringField(*extra, "py_callstack")) error.traceback = *stack;
  }
  return error;
}

}  // namespace ddprun
