// Reading the error file a worker leaves (PyTorch's @record format, or anything else).
#include "worker_error_file.h"

#include <catch2/catch.hpp>

using ddprun::ParseWorkerErrorFile;

TEST_CASE("PyTorch's record format yields the exception and its traceback") {
  auto error = ParseWorkerErrorFile(
      R"({"message": {"message": "ValueError: the loss is NaN", "extraInfo": )"
      R"({"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 3\n)"
      R"(ValueError: the loss is NaN\n", "timestamp": "1764480000"}}})");
  CHECK(error.message == "ValueError: the loss is NaN");
  CHECK(error.traceback ==
        "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: the loss "
        "is NaN\n");
}

TEST_CASE("a plain message object and escapes are read") {
  auto error = ParseWorkerErrorFile(R"({"message": "caf\u00e9 \/ tab\there", "errorCode": 3})");
  CHECK(error.message == "caf\xc3\xa9 / tab\there");
}

TEST_CASE("anything else is kept as it was written") {
  for (const char* text : {"not json at all", "{\"message\": 3}", "{\"other\": {}}",
                           "{\"message\": {\"message\": \"unterminated}", "[1, 2", "{} trailing",
                           "{\"message\": \"\\uZZZZ\"}"}) {
    INFO(text);
    auto error = ParseWorkerErrorFile(text);
    CHECK(error.message.empty());
    CHECK(error.raw == text);
  }
}

TEST_CASE("deeply nested input is refused rather than overflowing the stack") {
  std::string deep(100000, '[');
  CHECK(ParseWorkerErrorFile(deep).message.empty());
}
