#!/usr/bin/env python3
"""Names the failed tests of a nextest JUnit report, each with the line it panicked with (or the first
line of its failure), one line a test: what scripts/test.sh repeats at the end of a failed run's log.

Usage: failed-tests.py JUNIT_XML
"""

import sys
import xml.etree.ElementTree as ElementTree

# Where the reason is in a failed test's output: the panic's line, else the failure's own message.
PANIC_MARK = "panicked at"
# Lines kept a test, and characters a line: the end of a log is read at a glance.
MOST_TESTS = 25
LONGEST_LINE = 300


def reason(case):
    for kind in ("failure", "error"):
        element = case.find(kind)
        if element is None:
            continue
        output = "\n".join(
            text
            for text in (
                element.text,
                case.findtext("system-out"),
                case.findtext("system-err"),
            )
            if text
        )
        lines = output.splitlines()
        for i, line in enumerate(lines):
            if PANIC_MARK in line:
                # The panic's message is on the line after "panicked at <file>:<line>:".
                message = lines[i + 1] if i + 1 < len(lines) else ""
                return f"{line.strip()} {message.strip()}"
        return element.get("message") or element.get("type") or kind
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        root = ElementTree.parse(sys.argv[1]).getroot()
    except (OSError, ElementTree.ParseError) as error:
        print(f"no JUnit report ({error}): the tests did not build or did not start; the errors are above")
        return
    failed = []
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            why = reason(case)
            if why is not None:
                failed.append(f"{suite.get('name')} {case.get('name')}: {why}"[:LONGEST_LINE])
    for line in failed[:MOST_TESTS]:
        print(line)
    if len(failed) > MOST_TESTS:
        print(f"... and {len(failed) - MOST_TESTS} more")


if __name__ == "__main__":
    main()
