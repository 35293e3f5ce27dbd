"""Parse pytest's JUnit XML (``junit_family=xunit1``) into per-test outcomes. Pure."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

#: Reports larger than this are not parsed: a real run of a turn's tests is far smaller.
MAX_REPORT_BYTES = 8 * 1024 * 1024
_PARAMS = re.compile(r"\[.*\]$")


@dataclass(frozen=True)
class Outcome:
    status: str
    """``passed``, ``failed``, ``error`` or ``skipped``."""
    message: str = ""


def base_id(test_id: str) -> str:
    """``t/test_a.py::test_x[1-2]`` -> ``t/test_a.py::test_x``."""
    return _PARAMS.sub("", test_id)


def parse_junit(xml_text: str, prefix: str = "tests/") -> dict[str, Outcome]:
    """Outcome per test id (``<turn dir>/<file>::<name>``), ids relative to ``prefix``.

    Raises ValueError when the report is not a pytest JUnit report.
    """
    if len(xml_text) > MAX_REPORT_BYTES:
        raise ValueError("report too large")
    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if root.tag not in ("testsuite", "testsuites") or not suites:
        raise ValueError(f"not a JUnit report (root element <{root.tag}>)")
    outcomes: dict[str, Outcome] = {}
    for case in (case for suite in suites for case in suite.iter("testcase")):
        test_id = _case_id(case, prefix)
        if test_id is None:
            continue
        outcomes[test_id] = _case_outcome(case, outcomes.get(test_id))
    return outcomes


def _case_id(case: ET.Element, prefix: str) -> str | None:
    file = case.get("file", "")
    name = case.get("name", "")
    classname = case.get("classname", "")
    if not file:
        # A collection error: pytest names the module in ``name`` and leaves file empty.
        module = (classname + "." + name).strip(".") if classname else name
        file = module.replace(".", "/") + ".py"
        name = ""
    if not file.startswith(prefix):
        return None
    module = file[: -len(".py")].replace("/", ".")
    if not classname and name == module:
        return file[len(prefix):]  # the module itself failed to collect
    classes = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    parts = [file[len(prefix):], *filter(None, classes.split(".")), name]
    return "::".join(p for p in parts if p)


def _case_outcome(case: ET.Element, previous: Outcome | None) -> Outcome:
    status, message = "passed", ""
    for tag in ("error", "failure", "skipped"):
        child = case.find(tag)
        if child is not None:
            status = {"failure": "failed"}.get(tag, tag)
            message = (child.get("message") or "")[:500]
            break
    if previous is not None and previous.status != "passed":
        return previous  # a teardown error after a failure keeps the failure
    return Outcome(status, message)
