#!/usr/bin/env python3
"""Counts one CTest run from its JUnit file (ctest --output-junit) for ./run.sh's summary.

Prints each skipped test with its reason (the "skipped: ..." line it printed, see
tests/support/skip.h), then, as the last line, "PASSED FAILED SKIPPED".
Usage: junit_counts.py FILE
"""
import re
import sys
import xml.etree.ElementTree as ElementTree


def main(path):
    passed = failed = skipped = 0
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("skipped") is not None or status in ("notrun", "disabled", "skipped"):
            skipped += 1
            output = case.findtext("system-out") or ""
            reason = re.search(r"^skipped: (.*)$", output, re.MULTILINE)
            print("  skipped: %s (%s)" % (case.get("name"),
                                          reason.group(1) if reason else "no reason printed"))
        elif case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    print(passed, failed, skipped)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
