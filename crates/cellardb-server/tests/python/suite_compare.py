"""Compares two runs of Google's system tests of its Python client.

    python suite_compare.py CELLAR.xml EMULATOR.xml

Each file is pytest's JUnit XML report of one run of `tests/system` of the
`google-cloud-bigtable` source distribution, the first against
`cellar serve`, the second against Google's emulator (.ci/google-suite runs
both). Prints each run's counts and time, and every test whose outcome
differs. Exits 1 if a test that passed on the emulator did not pass on
`cellar serve`, or if either report holds no test (a run that did not
start); a test that passes on `cellar serve` alone is reported, not failed.
"""

import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    """The outcome of each test case of report `path`, and its total time."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    cases = {}
    seconds = 0.0
    for suite in suites:
        seconds += float(suite.get("time", "0"))
        for case in suite.iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            if case.find("failure") is not None or case.find("error") is not None:
                outcome = "failed"
            elif case.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "passed"
            # A test that errs in its teardown after passing is reported
            # twice; the worse outcome stands.
            if cases.get(name) != "failed":
                cases[name] = outcome
    return cases, seconds


def counts(cases):
    kinds = ("passed", "failed", "skipped")
    return ", ".join(f"{sum(1 for o in cases.values() if o == k)} {k}" for k in kinds)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cellar, cellar_seconds = outcomes(sys.argv[1])
    emulator, emulator_seconds = outcomes(sys.argv[2])
    print(f"cellar serve: {counts(cellar)} in {cellar_seconds:.1f} s")
    print(f"emulator:     {counts(emulator)} in {emulator_seconds:.1f} s")
    if not cellar or not emulator:
        print("a run holds no test: it did not start", file=sys.stderr)
        return 1
    lost = []
    for name in sorted(set(cellar) | set(emulator)):
        ours, theirs = cellar.get(name, "absent"), emulator.get(name, "absent")
        if ours == theirs:
            continue
        print(f"  {name}: cellar serve {ours}, emulator {theirs}")
        if theirs == "passed":
            lost.append(name)
    if lost:
        print(f"{len(lost)} test(s) pass on the emulator and not on cellar serve", file=sys.stderr)
        return 1
    print("ok: every test that passes on the emulator passes on cellar serve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
