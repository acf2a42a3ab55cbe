"""A pytest plugin for Google's system tests against `cellar serve`.

The suite skips some tests whenever BIGTABLE_EMULATOR_HOST is set, for what
Google's emulator does not do. Where `cellar serve` does it, this plugin
lifts the skip, so the test runs, and .ci/google-suite requires it to pass
(`suite_compare.py --must-pass`). Load it with `-p unskip` and this
directory on PYTHONPATH; UNSKIPPED names the file the lifted tests' ids
are written to.
"""

import os

# The reasons the suite gives, for what cellar serve does as Bigtable does.
SERVED = {
    # Bigtable refuses an empty row key, and a conditional write with
    # neither branch, with INVALID_ARGUMENT.
    "emulator doesn't raise InvalidArgument",
}


def pytest_collection_modifyitems(config, items):
    lifted = []
    for item in items:
        marks = [m for m in item.own_markers if m.name == "skipif" and m.kwargs.get("reason") in SERVED]
        if marks:
            item.own_markers = [m for m in item.own_markers if m not in marks]
            lifted.append(item.nodeid)
    with open(os.environ["UNSKIPPED"], "w") as out:
        out.writelines(f"{nodeid}\n" for nodeid in lifted)
