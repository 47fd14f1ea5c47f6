// ParseWorkerErrorFile: a small JSON reader for the error file's shape; see worker_error_file.h.
#include "ddprun/agent/worker_error_file.h"

#include <map>
#include <memory>
#include <optional>
#include <string_view>

namespace ddprun {
namespace {

// A JSON value, reduced to what the error file needs: objects and strings are kept, every other
// value is only validated.
struct JsonValue {
  std::optional<std::string> string;
  std::map<std::string, std::shared_ptr<JsonValue>> object;

  const JsonValue* Get(const std::string& key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : it->second.get();
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : text_(text) {}

  // The document's value, or nullopt when the text is not one JSON value.
  std::optional<JsonValue> Document() {
    JsonValue value;
    if (!Value(value, 0)) return std::nullopt;
    SkipSpace();
    if (at_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  static constexpr int kMaxDepth = 64;

  void SkipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t')) {
      ++at_;
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  bool Value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(depth);
    if (c == '"') {
      std::string s;
      if (!String(s)) return false;
      out.string = std::move(s);
      return true;
    }
    return Scalar();
  }

  bool Object(JsonValue& out, int depth) {
    ++at_;  // '{'
    if (Consume('}')) return true;
    do {
      SkipSpace();
      std::string key;
      if (!String(key) || !Consume(':')) return false;
      auto value = std::make_shared<JsonValue>();
      if (!Value(*value, depth + 1)) return false;
      out.object[key] = std::move(value);
    } while (Consume(','));
    return Consume('}');
  }

  bool Array(int depth) {
    ++at_;  // '['
    if (Consume(']')) return true;
    do {
      JsonValue ignored;
      if (!Value(ignored, depth + 1)) return false;
    } while (Consume(','));
    return Consume(']');
  }

  // Numbers, true, false, null: validated loosely (the report never needs their values).
  bool Scalar() {
    const size_t start = at_;
    while (at_ < text_.size() &&
           std::string_view("+-.0123456789eEtrufalsn").find(text_[at_]) != std::string_view::npos) {
      ++at_;
    }
    return at_ > start;
  }

  bool String(std::string& out) {
    if (at_ >= text_.size() || text_[at_] != '"') return false;
    ++at_;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return true;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_ >= text_.size()) return false;
      const char escaped = text_[at_++];
      switch (escaped) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          if (at_ + 4 > text_.size()) return false;
          const unsigned code =
              static_cast<unsigned>(std::stoul(text_.substr(at_, 4), nullptr, 16));
          at_ += 4;
          AppendUtf8(out, code);
          break;
        }
        default:
          out.push_back(escaped);  // '"', '\\', '/'
      }
    }
    return false;
  }

  // Surrogate pairs are kept as two code units' worth of replacement: the report is text for
  // people, not a round trip.
  static void AppendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  const std::string& text_;
  size_t at_ = 0;
};

}  // namespace

WorkerError ParseWorkerErrorFile(const std::string& text) {
  WorkerError error;
  error.raw = text;
  std::optional<JsonValue> document;
  try {
    document = JsonReader(text).Document();
  } catch (const std::exception&) {  // a malformed \u escape
    return error;
  }
  if (!document) return error;
  const JsonValue* outer = document->Get("message");
  if (outer == nullptr) return error;
  if (outer->string) {  // a plain {"message": "..."}
    error.message = *outer->string;
    return error;
  }
  const JsonValue* message = outer->Get("message");
  if (message == nullptr || !message->string) return error;
  error.message = *message->string;
  if (const JsonValue* extra = outer->Get("extraInfo")) {
    if (const JsonValue* stack = extra->Get("py_callstack"); stack && stack->string) {
      error.traceback = *stack->string;
    }
  }
  return error;
}

}  // namespace ddprun
