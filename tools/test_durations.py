"""Each test file's (or notebook's) total time in a `pytest --junitxml` report, longest first.

    .venv/bin/pytest --nbval -n 2 --dist loadscope --junitxml=/tmp/junit.xml
    python tools/test_durations.py /tmp/junit.xml       # then update conftest.SLOWEST_FIRST
"""

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def file_totals(report: str) -> list[tuple[str, float]]:
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).iter("testcase"):
        classname = case.get("classname", "")
        # "tests.test_x" or "tests.test_x.TestClass" for tests, "notebooks.01_x.ipynb" for nbval's
        # notebooks: back to the paths that conftest.SLOWEST_FIRST names
        folder, rest = classname.split(".", 1)
        path = case.get("file") or (
            f"{folder}/{rest}" if rest.endswith(".ipynb") else f"{folder}/{rest.split('.')[0]}.py"
        )
        totals[path] += float(case.get("time", 0))
    return sorted(totals.items(), key=lambda item: -item[1])


if __name__ == "__main__":
    for path, seconds in file_totals(sys.argv[1]):
        print(f"{seconds:8.1f}  {path}")
