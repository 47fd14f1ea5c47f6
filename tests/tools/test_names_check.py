#!/usr/bin/env python3
"""Fails when a Catch2 test name could not become one CTest test.

catch_discover_tests hands the names to CMake as a list, so a ';' splits one test into two
that match nothing and fail ("No test cases matched"). Names are read from the sources: the
string literals of each TEST_CASE, joined as the compiler joins them.
Usage: test_names_check.py DIR...
"""
import pathlib
import re
import sys

TEST_CASE = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def main(directories):
    bad = []
    for directory in directories:
        for source in sorted(pathlib.Path(directory).rglob("*.cc")):
            for case in TEST_CASE.finditer(source.read_text()):
                name = "".join(LITERAL.findall(case.group(1)))
                if ";" in name:
                    bad.append(f"{source}: {name}")
    for line in bad:
        print(f"test_names_check: a ';' would split this test in CTest: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
