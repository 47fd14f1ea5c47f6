#!/usr/bin/env python3
"""Fails when a Catch2 test name could not become one CTest test, or would hang its report.

catch_discover_tests hands the names to CMake as a list, so a ';' splits one test into two
that match nothing and fail ("No test cases matched"). And Catch2's console reporter indents the
wrapped lines of a name by the place of its first ": "; from the reporter's width on, it wraps
forever, writing the same line (seen: a test that never ended). Names are read from the sources:
the string literals of each TEST_CASE, joined as the compiler joins them.
Usage: test_names_check.py DIR...
"""
import pathlib
import re
import sys

TEST_CASE = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
# The console's width less a margin: a name's first ": " must end before it.
COLON_LIMIT = 70


def main(directories):
    bad = []
    for directory in directories:
        for source in sorted(pathlib.Path(directory).rglob("*.cc")):
            for case in TEST_CASE.finditer(source.read_text()):
                name = "".join(LITERAL.findall(case.group(1)))
                if ";" in name:
                    bad.append(f"a ';' would split this test in CTest: {source}: {name}")
                colon = name.find(": ")
                if colon >= 0 and colon + 2 >= COLON_LIMIT:
                    bad.append(f"Catch2's report would wrap this name forever (its first ': ' "
                               f"ends at column {colon + 2}, at most {COLON_LIMIT - 1}): "
                               f"{source}: {name}")
    for line in bad:
        print(f"test_names_check: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
