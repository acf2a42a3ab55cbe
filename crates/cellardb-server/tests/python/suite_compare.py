"""Compares two runs of Google's system tests of its Python client.

    python suite_compare.py CELLAR.xml EMULATOR.xml [--must-pass IDS]

Each file is pytest's JUnit XML report of one run of `tests/system` of the
`google-cloud-bigtable` source distribution, the first against
`cellar serve`, the second against Google's emulator (.ci/google-suite runs
both). Prints each run's counts and time, and every test whose outcome
differs. Exits 1 if a test that passed on the emulator did not pass on
`cellar serve`, if a test listed in file IDS (pytest node ids, one a line:
the tests unskip.py let run against `cellar serve` alone) did not pass on
it, or if either report holds no test (a run that did not start).
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
            # pytest writes a node id's path as a dotted class name.
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


def junit_name(nodeid):
    """A pytest node id as the JUnit report names its case."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    classname = ".".join([path.removesuffix(".py").replace("/", ".")] + parts[:-1])
    return f"{classname}::{parts[-1]}"


def main():
    args = sys.argv[1:]
    must_pass = []
    if len(args) == 4 and args[2] == "--must-pass":
        with open(args[3]) as ids:
            must_pass = [junit_name(line.strip()) for line in ids if line.strip()]
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    cellar, cellar_seconds = outcomes(args[0])
    emulator, emulator_seconds = outcomes(args[1])
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
    unserved = [name for name in must_pass if cellar.get(name) != "passed"]
    for name in unserved:
        print(f"  {name}: cellar serve {cellar.get(name, 'absent')}, and it must pass there")
    if lost or unserved:
        print(
            f"{len(lost)} test(s) pass on the emulator and not on cellar serve; "
            f"{len(unserved)} test(s) the emulator skips do not pass on cellar serve",
            file=sys.stderr,
        )
        return 1
    print(
        "ok: every test that passes on the emulator passes on cellar serve, "
        f"and the {len(must_pass)} it skips that cellar serve serves"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
