// ParseJson: what the strict JSON reader accepts, what it refuses, and the values it reads.
#include "ddprun/base/json_reader.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

using namespace ddprun;
using Type = JsonValue::Type;

namespace {

// The string `text` holds as a JSON document, or "<refused>".
std::string StringOf(const std::string& text) {
  const auto value = ParseJson(text);
  if (!value) return "<refused>";
  REQUIRE(value->type() == Type::kString);
  return value->string();
}

}  // namespace

TEST_CASE("nested objects and arrays are read with every kind of value", "[json_reader]") {
  const auto document = ParseJson(
      R"( {"a": {"b": [1, -2.5, "x", true, false, null, [], {}]}, "c": {"d": {"e": "deep"}}} )");
  REQUIRE(document);
  REQUIRE(document->type() == Type::kObject);
  CHECK(document->members().size() == 2);
  const JsonValue* b = document->ObjectAt("a")->Find("b");
  REQUIRE(b != nullptr);
  REQUIRE(b->type() == Type::kArray);
  const auto& elements = b->elements();
  REQUIRE(elements.size() == 8);
  CHECK(elements[0].number() == 1);
  CHECK(elements[1].number() == -2.5);
  CHECK(elements[2].string() == "x");
  CHECK((elements[3].type() == Type::kBool && elements[3].boolean()));
  CHECK((elements[4].type() == Type::kBool && !elements[4].boolean()));
  CHECK(elements[5].type() == Type::kNull);
  CHECK((elements[6].type() == Type::kArray && elements[6].elements().empty()));
  CHECK((elements[7].type() == Type::kObject && elements[7].members().empty()));
  CHECK(*document->ObjectAt("c")->ObjectAt("d")->StringAt("e") == "deep");
}

TEST_CASE("the accessors answer nullptr for a missing member or one of another type",
          "[json_reader]") {
  const auto document = ParseJson(R"({"s": "text", "o": {}, "n": 3})");
  REQUIRE(document);
  CHECK(document->StringAt("o") == nullptr);
  CHECK(document->ObjectAt("s") == nullptr);
  CHECK(document->StringAt("n") == nullptr);
  CHECK(document->Find("missing") == nullptr);
  const auto array = ParseJson(R"(["s"])");
  REQUIRE(array);
  CHECK(array->Find("s") == nullptr);
  CHECK(array->StringAt("s") == nullptr);
}

TEST_CASE("every escape of a string is decoded", "[json_reader]") {
  CHECK(StringOf(R"("\" \\ \/ \b \f \n \r \t")") == "\" \\ / \b \f \n \r \t");
  CHECK(StringOf(R"("\u0041\u00e9\u20AC\u0000")") == std::string("A\xc3\xa9\xe2\x82\xac\0", 7));
  CHECK(StringOf(R"("\x41")") == "<refused>");
  CHECK(StringOf(R"("\'")") == "<refused>");
  CHECK(StringOf(R"("\u12")") == "<refused>");
  CHECK(StringOf(R"("\u-123")") == "<refused>");
  CHECK(StringOf(R"("\u+123")") == "<refused>");
  CHECK(StringOf(R"("\uZZZZ")") == "<refused>");
  CHECK(StringOf("\"\\") == "<refused>");
  CHECK(StringOf("\"unterminated") == "<refused>");
}

TEST_CASE("a surrogate pair is one UTF-8 character, and a lone surrogate is refused",
          "[json_reader]") {
  CHECK(StringOf(R"("\ud83d\ude00")") == "\xf0\x9f\x98\x80");  // U+1F600
  CHECK(StringOf(R"("\uD800\uDC00")") == "\xf0\x90\x80\x80");  // U+10000
  CHECK(StringOf(R"("\udbff\udfff")") == "\xf4\x8f\xbf\xbf");  // U+10FFFF
  CHECK(StringOf(R"("\ud83d")") == "<refused>");
  CHECK(StringOf(R"("\ud83d tail")") == "<refused>");
  CHECK(StringOf(R"("\ud83d\u0041")") == "<refused>");
  CHECK(StringOf(R"("\ud83d\ud83d")") == "<refused>");
  CHECK(StringOf(R"("\ude00")") == "<refused>");
  CHECK(StringOf(R"("\ude00\ud83d")") == "<refused>");
}

TEST_CASE("raw UTF-8 is kept and malformed UTF-8 is refused", "[json_reader]") {
  CHECK(StringOf("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  for (const char* bad : {"\"\xff\"", "\"\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
                          "\"\xf4\x90\x80\x80\"", "\"\x80\"", "\"\xe2\x82\""}) {
    INFO(bad);
    CHECK(StringOf(bad) == "<refused>");
  }
}

TEST_CASE("a control character written raw in a string is refused", "[json_reader]") {
  CHECK(StringOf("\"a\tb\"") == "<refused>");
  CHECK(StringOf("\"a\nb\"") == "<refused>");
  CHECK(StringOf(std::string("\"a\0b\"", 5)) == "<refused>");
  CHECK(StringOf("\"a\x1f\"") == "<refused>");
  CHECK(StringOf("\"a\x7f\"") == "a\x7f");  // DEL is no control character to JSON
}

TEST_CASE("numbers follow the JSON grammar", "[json_reader]") {
  const auto number = [](const char* text) {
    const auto value = ParseJson(text);
    REQUIRE(value);
    REQUIRE(value->type() == Type::kNumber);
    return value->number();
  };
  CHECK(number("0") == 0);
  CHECK(number("-0") == 0);
  CHECK(std::signbit(number("-0")));
  CHECK(number("1e5") == 100000);
  CHECK(number("1E-2") == 0.01);
  CHECK(number("1E+2") == 100);
  CHECK(number("-12.25e1") == -122.5);
  CHECK(number("10") == 10);
  CHECK(number("123456789012345678901234567890") == 123456789012345678901234567890.0);
  CHECK(number("1e-999") == 0);  // too small for a double: zero
  CHECK(number("0.000001e-400") == 0);
  for (const char* bad :
       {"01", "-01", "00", "+1", "1.", ".5", "-", "1e", "1e+", "1.e5", "0x10", "NaN", "Infinity",
        "-Infinity", "1e999", "-1e999", "1000000e303", "--1", "1 2"}) {
    INFO(bad);
    CHECK_FALSE(ParseJson(bad));
  }
}

TEST_CASE("a document is exactly one value, with only whitespace around it", "[json_reader]") {
  CHECK(ParseJson(" \t\r\n{\"a\": 1}\n "));
  CHECK(ParseJson("null"));
  CHECK(ParseJson("\"top-level string\""));
  for (const char* bad : {"", "   ", "{} trailing", "{}{}", "{} {}", "[1] [2]", "1 2", "{", "[1, 2",
                          "[1,]", "{\"a\": 1,}", "{'a': 1}", "{a: 1}", "{\"a\" 1}",
                          "{\"a\": 1 /* no */}", "tru", "nul", "trueish", "\xef\xbb\xbf{}"}) {
    INFO(bad);
    CHECK_FALSE(ParseJson(bad));
  }
  // A NUL byte after the document is trailing text too.
  CHECK_FALSE(ParseJson(std::string("{}\0", 3)));
}

TEST_CASE("nesting deeper than the bound is refused without exhausting the stack",
          "[json_reader]") {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  CHECK(ParseJson(nested(kMaxJsonDepth)));
  CHECK_FALSE(ParseJson(nested(kMaxJsonDepth + 1)));
  CHECK_FALSE(ParseJson(std::string(1000000, '[')));
  std::string objects;
  for (int i = 0; i < kMaxJsonDepth + 1; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  CHECK_FALSE(ParseJson(objects));
}

TEST_CASE("of a key repeated in an object the last value is kept", "[json_reader]") {
  const auto document = ParseJson(R"({"b": 1, "a": "first", "c": 2, "a": "second", "a": "last"})");
  REQUIRE(document);
  CHECK(*document->StringAt("a") == "last");
  REQUIRE(document->members().size() == 3);
  CHECK(document->members()[0].first == "a");  // members are sorted by key
  CHECK(document->members()[1].first == "b");
  CHECK(document->members()[2].first == "c");
  const auto nested = ParseJson(R"({"a": {"x": 1}, "a": "plain"})");
  REQUIRE(nested);
  CHECK(nested->ObjectAt("a") == nullptr);
  CHECK(*nested->StringAt("a") == "plain");
}

TEST_CASE("keys are compared as decoded strings", "[json_reader]") {
  const auto document = ParseJson(R"({"caf\u00e9": 1, "a\u0000b": 2})");
  REQUIRE(document);
  CHECK(document->Find("caf\xc3\xa9") != nullptr);
  CHECK(document->Find(std::string_view("a\0b", 3)) != nullptr);
  CHECK(document->Find("a") == nullptr);
}
