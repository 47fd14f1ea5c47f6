// A strict JSON reader (RFC 8259) for the small documents ddprun reads but did not write, such as
// a worker's error file (agent/src/worker_error_file.cc). Our own, so that the launcher links no
// JSON library (and no Protobuf) for it. It reads a whole document into a tree of JsonValue; it
// writes nothing. Input is untrusted: every malformed text is refused as a value (nullopt), never
// by an exception, a crash or unbounded recursion.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddprun {

// The deepest nesting of arrays and objects ParseJson accepts: `[[1]]` is 2 deep. Deeper
// documents are refused, so that hostile input cannot exhaust the stack.
inline constexpr int kMaxJsonDepth = 64;

// One JSON value: null, a boolean, a number, a string, an array or an object. An immutable
// value type; copies are deep, and distinct values may be used from different threads.
class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null
  static JsonValue Bool(bool value);
  static JsonValue Number(double value);
  static JsonValue String(std::string value);
  static JsonValue Array(std::vector<JsonValue> elements);
  // An object of `members`, in any order. Of members with the same key the last one is kept, as
  // JavaScript's JSON.parse and Python's json.loads do.
  static JsonValue Object(std::vector<Member> members);

  Type type() const { return type_; }
  // Each of these is the value when type() is its type, and false, 0 or empty otherwise.
  bool boolean() const { return boolean_; }
  double number() const { return number_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& elements() const { return elements_; }
  const std::vector<Member>& members() const { return members_; }  // sorted by key, keys unique

  // The member `key` of this object; nullptr when this is not an object or has no such member.
  const JsonValue* Find(std::string_view key) const;
  // The string at `key` of this object; nullptr when absent, of another type, or not an object.
  const std::string* StringAt(std::string_view key) const;
  // The object at `key` of this object; nullptr when absent, of another type, or not an object.
  const JsonValue* ObjectAt(std::string_view key) const;

 private:
  Type type_ = Type::kNull;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> elements_;
  std::vector<Member> members_;
};

// `text` as exactly one JSON document, with optional whitespace around it; nullopt for anything
// else. Strict: no comments, trailing commas, single quotes, NaN or Infinity; strings are valid
// UTF-8 without raw control characters, their escapes are decoded (\uXXXX surrogate pairs to one
// UTF-8 character; a lone surrogate is refused); numbers follow the JSON grammar and are read as
// doubles, one too large for a double is refused and one too small reads as zero (RFC 8259
// section 9 lets a reader limit the range). Nesting deeper than kMaxJsonDepth is refused.
std::optional<JsonValue> ParseJson(std::string_view text);

}  // namespace ddprun
