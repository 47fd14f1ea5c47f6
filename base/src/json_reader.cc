// ParseJson and JsonValue; see json_reader.h. A recursive-descent parser over the text, one
// function per grammar rule of RFC 8259; each returns false at the first error, and the depth it
// is given bounds the recursion.
#include "ddprun/base/json_reader.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace ddprun {

JsonValue JsonValue::Bool(bool value) {
  JsonValue json;
  json.type_ = Type::kBool;
  json.boolean_ = value;
  return json;
}

JsonValue JsonValue::Number(double value) {
  JsonValue json;
  json.type_ = Type::kNumber;
  json.number_ = value;
  return json;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue json;
  json.type_ = Type::kString;
  json.string_ = std::move(value);
  return json;
}

JsonValue JsonValue::Array(std::vector<JsonValue> elements) {
  JsonValue json;
  json.type_ = Type::kArray;
  json.elements_ = std::move(elements);
  return json;
}

JsonValue JsonValue::Object(std::vector<Member> members) {
  // Sorted (stably, so equal keys keep their order) and then deduplicated from the back, which
  // keeps the last of each key: O(n log n) however many keys hostile input repeats.
  const auto by_key = [](const Member& a, const Member& b) { return a.first < b.first; };
  std::stable_sort(members.begin(), members.end(), by_key);
  std::reverse(members.begin(), members.end());
  const auto same_key = [](const Member& a, const Member& b) { return a.first == b.first; };
  members.erase(std::unique(members.begin(), members.end(), same_key), members.end());
  std::reverse(members.begin(), members.end());
  JsonValue json;
  json.type_ = Type::kObject;
  json.members_ = std::move(members);
  return json;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  const auto it = std::lower_bound(
      members_.begin(), members_.end(), key,
      [](const Member& member, std::string_view wanted) { return member.first < wanted; });
  return it != members_.end() && it->first == key ? &it->second : nullptr;
}

const std::string* JsonValue::StringAt(std::string_view key) const {
  const JsonValue* value = Find(key);
  return value != nullptr && value->type_ == Type::kString ? &value->string_ : nullptr;
}

const JsonValue* JsonValue::ObjectAt(std::string_view key) const {
  const JsonValue* value = Find(key);
  return value != nullptr && value->type_ == Type::kObject ? value : nullptr;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The length of the well-formed UTF-8 sequence (Unicode's table 3-7: no overlong forms, no
// surrogates, nothing above U+10FFFF) that starts `text` with a byte of 0x80 or more, or 0.
size_t Utf8SequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return i < text.size() ? static_cast<uint8_t>(text[i]) : 0; };
  const uint8_t lead = byte(0);
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

// `code_point` (at most U+10FFFF, and no surrogate) appended to `out` as UTF-8.
void AppendUtf8(uint32_t code_point, std::string& out) {
  static constexpr uint8_t kLeadBits[] = {0x00, 0xC0, 0xE0, 0xF0};  // by continuation bytes
  const int continuation = code_point < 0x80      ? 0
                           : code_point < 0x800   ? 1
                           : code_point < 0x10000 ? 2
                                                  : 3;
  out += static_cast<char>(kLeadBits[continuation] | code_point >> 6 * continuation);
  for (int i = continuation - 1; i >= 0; --i) {
    out += static_cast<char>(0x80 | (code_point >> 6 * i & 0x3F));
  }
}

// Whether `number` (valid JSON, and out of a double's range) is too large rather than too small:
// whether the power of ten of its first significant digit, exponent included, is positive.
bool IsTooLarge(std::string_view number) {
  const size_t e = number.find_first_of("eE");
  long exponent = 0;  // clamped: far beyond any double's, and no overflow however many digits
  if (e != std::string_view::npos) {
    for (char c : number.substr(e + 1)) {
      if (IsDigit(c)) exponent = std::min(exponent * 10 + (c - '0'), 1000000L);
    }
    if (number[e + 1] == '-') exponent = -exponent;
  }
  const std::string_view mantissa = number.substr(0, e);
  const long first = static_cast<long>(mantissa.find_first_of("123456789"));
  const long point = static_cast<long>(std::min(mantissa.find('.'), mantissa.size()));
  return (first < point ? point - first - 1 : point - first) + exponent > 0;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> Document() {
    JsonValue value;
    SkipWhitespace();
    if (!Value(value, 0)) return std::nullopt;
    SkipWhitespace();
    if (at_ != text_.size()) return std::nullopt;  // trailing text, or a second document
    return value;
  }

 private:
  bool AtEnd() const { return at_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[at_]; }
  bool Consume(std::string_view word) {
    if (!text_.substr(at_).starts_with(word)) return false;
    at_ += word.size();
    return true;
  }
  void SkipWhitespace() {
    constexpr std::string_view kWhitespace = " \t\n\r";  // JSON's four; no NUL, no form feed
    while (!AtEnd() && kWhitespace.find(text_[at_]) != std::string_view::npos) ++at_;
  }

  // `depth`: how many arrays and objects enclose this value.
  bool Value(JsonValue& out, int depth) {
    switch (Peek()) {
      case '{':
        return depth < kMaxJsonDepth && ObjectValue(out, depth + 1);
      case '[':
        return depth < kMaxJsonDepth && ArrayValue(out, depth + 1);
      case '"': {
        std::string text;
        if (!StringValue(text)) return false;
        out = JsonValue::String(std::move(text));
        return true;
      }
      case 't':
        out = JsonValue::Bool(true);
        return Consume("true");
      case 'f':
        out = JsonValue::Bool(false);
        return Consume("false");
      case 'n':
        out = JsonValue();
        return Consume("null");
      default:
        return NumberValue(out);
    }
  }

  bool ObjectValue(JsonValue& out, int depth) {
    ++at_;  // '{'
    std::vector<JsonValue::Member> members;
    SkipWhitespace();
    if (!Consume("}")) {
      do {
        SkipWhitespace();
        JsonValue::Member member;
        if (Peek() != '"' || !StringValue(member.first)) return false;
        SkipWhitespace();
        if (!Consume(":")) return false;
        SkipWhitespace();
        if (!Value(member.second, depth)) return false;
        members.push_back(std::move(member));
        SkipWhitespace();
      } while (Consume(","));
      if (!Consume("}")) return false;
    }
    out = JsonValue::Object(std::move(members));
    return true;
  }

  bool ArrayValue(JsonValue& out, int depth) {
    ++at_;  // '['
    std::vector<JsonValue> elements;
    SkipWhitespace();
    if (!Consume("]")) {
      do {
        SkipWhitespace();
        if (!Value(elements.emplace_back(), depth)) return false;
        SkipWhitespace();
      } while (Consume(","));
      if (!Consume("]")) return false;
    }
    out = JsonValue::Array(std::move(elements));
    return true;
  }

  // The four hex digits of a \u escape (from_chars takes no sign or "0x" for an unsigned type).
  bool HexUnit(uint32_t& unit) {
    if (text_.size() - at_ < 4) return false;
    const char* begin = text_.data() + at_;
    at_ += 4;
    return std::from_chars(begin, begin + 4, unit, 16).ptr == begin + 4;
  }

  bool StringValue(std::string& out) {
    ++at_;  // '"'
    while (!AtEnd()) {
      const char c = text_[at_];
      if (c == '"') {
        ++at_;
        return true;
      }
      if (static_cast<uint8_t>(c) < 0x20) return false;  // control characters must be escaped
      if (static_cast<uint8_t>(c) >= 0x80) {
        const size_t length = Utf8SequenceLength(text_.substr(at_));
        if (length == 0) return false;
        out.append(text_.substr(at_, length));
        at_ += length;
        continue;
      }
      ++at_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (AtEnd()) return false;
      const char escape = text_[at_++];
      constexpr std::string_view kEscapes = "\"\\/bfnrt", kMeanings = "\"\\/\b\f\n\r\t";
      if (const size_t i = kEscapes.find(escape); i != std::string_view::npos) {
        out += kMeanings[i];
        continue;
      }
      uint32_t unit = 0;
      if (escape != 'u' || !HexUnit(unit) || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
      if (unit >= 0xD800 && unit <= 0xDBFF) {  // a high surrogate: its low one must follow
        uint32_t low = 0;
        if (!Consume("\\u") || !HexUnit(low) || low < 0xDC00 || low > 0xDFFF) return false;
        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      }
      AppendUtf8(unit, out);
    }
    return false;  // unterminated
  }

  // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  bool NumberValue(JsonValue& out) {
    const size_t start = at_;
    const auto digits = [&] {
      const size_t first = at_;
      while (IsDigit(Peek())) ++at_;
      return at_ > first;
    };
    Consume("-");
    if (!Consume("0") && !digits()) return false;  // after a leading 0, a digit is trailing text
    if (Consume(".") && !digits()) return false;
    if (Consume("e") || Consume("E")) {
      if (!Consume("+")) Consume("-");
      if (!digits()) return false;
    }
    const std::string_view number = text_.substr(start, at_ - start);
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error == std::errc::result_out_of_range) {
      if (IsTooLarge(number)) return false;
      value = number[0] == '-' ? -0.0 : 0.0;
    } else if (error != std::errc() || end != number.data() + number.size()) {
      return false;
    }
    out = JsonValue::Number(value);
    return true;
  }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::optional<JsonValue> ParseJson(std::string_view text) { return Parser(text).Document(); }

}  // namespace ddprun
