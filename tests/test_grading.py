"""Grading is pure: the harness parent's verdict is a function of the lines its children
sent, and the grade a function of the verdict. Both are tested on recorded lines."""

from __future__ import annotations

import hashlib
import random

import pytest

from stamina_gym.grading import canaries
from stamina_gym.grading.grade import Canaries, grade_run
from stamina_gym.grading.harness import _judge
from stamina_gym.grading.report import Outcome
from stamina_gym.sandbox import RunResult

OK_RUN = RunResult(exit_code=1, output="", output_bytes=0)
KEY = bytes(range(32))


def signed(*fields: str, key: bytes = KEY) -> bytes:
    body = "\x1f".join(fields).encode()
    return body + b"\t" + hashlib.sha256(key + body).hexdigest().encode()


def judge(*messages: bytes) -> dict:
    return _judge([b"hello " + KEY.hex().encode(), *messages], hashlib.sha256)


A, B = "tests/01-x/test_a.py::test_ok", "tests/01-x/test_a.py::test_bad"


def test_outcomes_come_from_the_harness_call_and_pytest_reports():
    verdict = judge(
        signed("call", A, "passed", ""), signed("report", A, "call", "passed", ""),
        signed("call", B, "failed", "AssertionError: x"), signed("report", B, "call", "failed", "E assert 1 == 2"),
        signed("report", "tests/01-x/test_a.py::test_fixture", "setup", "failed", "E fixture broke"),
        signed("call", "tests/01-x/test_a.py::test_skip", "skipped", "Skipped"),
        signed("report", "tests/01-x/test_a.py::test_skip", "call", "skipped", ""),
        signed("collect", "tests/02-y/test_b.py", "E   ModuleNotFoundError: No module named 'calc'"),
        signed("done", "1"),
    )  # fmt: skip
    assert verdict["forged"] == [] and verdict["done"] == 1
    statuses = {tid: status for tid, (status, _) in verdict["outcomes"].items()}
    assert statuses == {
        "01-x/test_a.py::test_ok": "passed", "01-x/test_a.py::test_bad": "failed",
        "01-x/test_a.py::test_fixture": "error", "01-x/test_a.py::test_skip": "skipped", "02-y/test_b.py": "error",
    }  # fmt: skip
    assert "ModuleNotFoundError" in verdict["outcomes"]["02-y/test_b.py"][1]


@pytest.mark.parametrize(
    "messages, proof",
    [
        ([signed("call", A, "passed", "", key=b"guess")], "did not come from the harness"),
        ([b"call\x1f" + A.encode() + b"\x1fpassed\x1f"], "did not come from the harness"),
        ([signed("call", A, "passed", ""), signed("call", A, "passed", "")], "reported twice"),
        ([signed("call", A, "failed", "AssertionError"), signed("report", A, "call", "passed", "")], "raised but was reported as passed"),
        ([signed("report", A, "call", "passed", "")], "without the harness seeing it run"),
        ([signed("done", "0"), signed("call", A, "passed", "")], "after the run ended"),
        ([signed("forged", "x's test function was replaced after collection")], "replaced"),
    ],
    ids=["wrong-key", "unsigned", "twice", "report-lies", "unseen", "after-done", "replaced"],
)
def test_the_parent_names_every_forgery(messages, proof):
    verdict = judge(*messages)
    assert any(proof in reason for reason in verdict["forged"]), verdict["forged"]


def test_a_child_that_never_said_hello_has_no_verdict():
    verdict = _judge([signed("call", A, "passed", "")], hashlib.sha256)
    assert not verdict["hello"] and verdict["outcomes"] == {}


def grade(outcomes, turn_ids, regression_ids=(), previously=frozenset(), run=OK_RUN, **kw):
    canary_set = Canaries({"c/test_c.py::test_p": "passed", "c/test_c.py::test_f": "failed"})
    if outcomes is not None:
        outcomes = {**outcomes, "c/test_c.py::test_p": Outcome("passed"), "c/test_c.py::test_f": Outcome("failed")}
    return grade_run(turn=1, turn_ids=turn_ids, regression_ids=regression_ids, previously_passing=previously,
                     outcomes=outcomes, run=run, canaries=canary_set, **kw)  # fmt: skip


def test_parametrised_test_passes_only_if_every_case_passes():
    outcomes = {"t/a.py::test_ok": Outcome("passed"), "t/a.py::test_p[1]": Outcome("passed"), "t/a.py::test_p[2]": Outcome("failed")}
    g = grade(outcomes, ["t/a.py::test_ok", "t/a.py::test_p"])
    assert g.turn_tests == {"t/a.py::test_ok": "passed", "t/a.py::test_p": "failed"}
    assert g.failure_class == "functional" and g.pass_fraction == 0.5


def test_collection_error_fails_every_test_of_the_module_as_build_with_regressions_counted():
    outcomes = {"t2/b.py": Outcome("error", "E   ImportError: cannot import name 'mul'"), "t1/a.py": Outcome("error", "ImportError")}
    g = grade(outcomes, ["t2/b.py::test_x", "t2/b.py::test_y"], ["t1/a.py::test_old"], frozenset({"t1/a.py::test_old"}))
    assert set(g.turn_tests.values()) == {"error"} and g.failure_class == "build"
    assert g.newly_broken == ("t1/a.py::test_old",) and g.regression_fraction == 1.0


def test_regression_counts_only_tests_that_passed_before():
    outcomes = {"t2/test.py::test_new": Outcome("passed"), "t1/test.py::test_a": Outcome("failed"), "t1/test.py::test_b": Outcome("failed")}
    g = grade(outcomes, ["t2/test.py::test_new"], ["t1/test.py::test_a", "t1/test.py::test_b"], frozenset({"t1/test.py::test_a"}))
    assert g.newly_broken == ("t1/test.py::test_a",)
    assert g.failure_class == "regression" and g.regression_fraction == 0.5


def test_a_must_fail_canary_that_passes_is_a_violation_and_nothing_counts_as_passed():
    canary_set = Canaries({"c/test_c.py::test_p": "passed", "c/test_c.py::test_f": "failed"})
    outcomes = {"t/test.py::test_x": Outcome("passed"), "c/test_c.py::test_p": Outcome("passed"), "c/test_c.py::test_f": Outcome("passed")}
    g = grade_run(turn=1, turn_ids=["t/test.py::test_x"], regression_ids=[], previously_passing=frozenset(),
                  outcomes=outcomes, run=OK_RUN, canaries=canary_set)  # fmt: skip
    assert g.failure_class == "violation" and not g.canaries_ok and g.passed == 0


def test_evidence_from_the_harness_is_a_violation():
    g = grade({"t/test.py::test_x": Outcome("passed")}, ["t/test.py::test_x"], evidence=("the audit hook saw ctypes.cdata",))
    assert g.failure_class == "violation" and "ctypes" in g.detail and g.passed == 0


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"complete": False}, "build"),
        ({"run": RunResult(exit_code=-9, output="", output_bytes=0, timed_out=True)}, "timeout"),
        ({"run": RunResult(exit_code=1, output="", output_bytes=0, limit="memory")}, "resource"),
    ],
    ids=["ended-early", "timeout", "resource"],
)
def test_a_run_that_did_not_finish_counts_every_test_as_failed(change, expected):
    """Tests that passed before the run stopped count for nothing: stopping early after
    forging the first tests (before a canary could run) must not pay."""
    outcomes = {"t/test.py::test_x": Outcome("passed"), "t0/test.py::test_old": Outcome("passed")}
    g = grade(outcomes, ["t/test.py::test_x"], ["t0/test.py::test_old"], frozenset({"t0/test.py::test_old"}), **change)
    assert g.failure_class == expected and g.passed == 0 and g.newly_broken == ("t0/test.py::test_old",)


def test_a_must_pass_canary_that_fails_makes_the_run_untrusted_not_forged():
    canary_set = Canaries({"c/test_c.py::test_p": "passed", "c/test_c.py::test_f": "failed"})
    outcomes = {"t/test.py::test_x": Outcome("passed"), "c/test_c.py::test_p": Outcome("failed"), "c/test_c.py::test_f": Outcome("failed")}
    g = grade_run(turn=1, turn_ids=["t/test.py::test_x"], regression_ids=[], previously_passing=frozenset(),
                  outcomes=outcomes, run=OK_RUN, canaries=canary_set)  # fmt: skip
    assert g.failure_class == "build" and g.passed == 0


@pytest.mark.parametrize(
    "run, expected",
    [
        (RunResult(exit_code=0, output="", output_bytes=0), "build"),
        (RunResult(exit_code=-9, output="", output_bytes=0, timed_out=True), "timeout"),
        (RunResult(exit_code=1, output="", output_bytes=0, limit="memory"), "resource"),
        (RunResult(exit_code=139, output="", output_bytes=0), "build"),
        (None, "infrastructure"),
    ],
)
def test_missing_report_is_classified(run, expected):
    """Only a sandbox that never ran voids the sample; an exit without a report is the
    graded code's doing and is paid as a build that does not work."""
    g = grade(None, ["t/test.py::test_x"], run=run, report_problem="the harness wrote no report")
    assert g.failure_class == expected
    assert g.turn_tests == {"t/test.py::test_x": "missing"}


def test_summary_never_names_tests():
    g = grade({"t/test.py::test_secret_name": Outcome("failed", "assert 'hidden' == 'x'")}, ["t/test.py::test_secret_name"])
    assert "secret" not in g.summary() and "hidden" not in g.summary()
    assert "0/1" in g.summary() and "functional" in g.summary()


# -- canaries ----------------------------------------------------------------------------

MODULE = '''"""Tags on todos."""
from todo import service  # the product

LIMIT = 3


def test_tags_are_kept(tmp_path):
    status = service.create(tmp_path, tags=["a"])
    assert status == 201
    status = 500


def test_tags_are_trimmed():
    assert service.trim(" a ") == "a"
'''


def run_canary(source: str, name: str, product_status, trimmed="a") -> bool:
    """Execute a canary against a fake product whose create returns ``product_status``
    and whose trim returns ``trimmed``; True when the test passes."""

    class Service:
        @staticmethod
        def create(path, tags):
            return product_status

        @staticmethod
        def trim(text):
            return trimmed

    namespace = {"__name__": "canary"}
    exec(compile(source.replace("from todo import service  # the product", ""), "canary", "exec"), namespace)
    namespace["service"] = Service
    test = namespace[name]
    try:
        test(*(["/tmp"] if test.__code__.co_argcount else []))
    except AssertionError:
        return False
    return True


class EqualsAnything:
    """What a product built to fool comparisons returns: equal to anything, holding anything."""

    def __eq__(self, other):
        return True

    def __contains__(self, item):
        return True

    __hash__ = object.__hash__


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("product_status", [201, 200, 202, 400, "201"])
def test_a_perturbed_canary_fails_whatever_an_honest_product_returns(seed, product_status):
    source = canaries.must_fail(random.Random(seed), MODULE, "test_labels_survive")
    assert source is not None and source.startswith('"""Tags on todos."""\nfrom todo import service  # the product')
    assert "assert not" not in source  # the module compares with literals: no negation, no tell
    assert not run_canary(source, "test_labels_survive", product_status)


@pytest.mark.parametrize("seed", range(20))
def test_a_perturbed_canary_passes_for_a_product_that_equals_anything(seed):
    source = canaries.must_fail(random.Random(seed), MODULE, "test_labels_survive")
    assert run_canary(source, "test_labels_survive", EqualsAnything(), EqualsAnything())


def test_a_perturbed_canary_keeps_the_text_verbatim_but_for_one_literal():
    module = MODULE.replace('service.trim(" a ") == "a"', 'service.trim(" a ") == "ä café"  # comment')
    for seed in range(30):
        source = canaries.must_fail(random.Random(seed), module, "test_labels_survive")
        head, *functions = module.split("\n\n\ndef ")
        canary_head, canary_function = source.split("\n\n\ndef ")
        assert canary_head == head
        lines = canary_function.splitlines()
        twins = [f.splitlines() for f in functions if f.splitlines()[0].split("(", 1)[1] == lines[0].split("(", 1)[1]]
        changed = [(a, b) for twin in twins if len(twin) == len(lines) for a, b in zip(twin[1:], lines[1:]) if a != b]
        assert len(twins) == 1 and len(changed) == 1, source
        before, after = changed[0]
        same = next(i for i, (x, y) in enumerate(zip(before, after)) if x != y)
        tail = next(i for i, (x, y) in enumerate(zip(reversed(before), reversed(after))) if x != y)
        assert any(before[same : len(before) - tail] in literal for literal in ("201", "ä café")), (before, after)


@pytest.mark.parametrize("literal, honest", [("12", ["12", "13", "11", "21"]), ("Buy milk", ["buy milk", "Buy milk ", "Buy mil"]),
                                             ("id 12", ["id 13", "id 21"]), ("a", ["A", "b", ""])])  # fmt: skip
def test_a_perturbed_text_is_no_near_miss_of_the_original(literal, honest):
    for seed in range(200):
        changed = canaries._perturbed_text(random.Random(seed), literal)
        assert changed != literal and changed.lower() != literal.lower() and changed not in honest


@pytest.mark.parametrize("product_status", [201, 400])
def test_a_must_fail_canary_negates_an_assertion_where_no_literal_is_compared(product_status):
    module = MODULE.replace("assert status == 201", "assert status == LIMIT").replace('== "a"', "== LIMIT")
    source = canaries.must_fail(random.Random(3), module, "test_labels_survive")
    assert source is not None and "def test_labels_survive(tmp_path):" in source
    assert source.index("assert not (status == LIMIT)") < source.index("status = 500")  # right after its assertion
    assert not run_canary(source, "test_labels_survive", product_status)


def test_no_canary_copies_a_test_whose_run_the_harness_voids():
    """Fails where a must-fail canary copied toolz's ``test_doctests`` (``doctest.testmod``
    sets ``sys.settrace`` back) and voided an honest run at random: no canary is made from
    a test that calls what the audit hook stops, hands the product its own module (funcy's
    ``monkey(sys.modules[__name__])`` rebinds the module's ``f``), or that hypothesis drives."""
    module = (
        "import doctest\nimport gc\nimport sys\nimport unittest\n\nfrom hypothesis import given, strategies\n\nimport toolz\n\n\n"
        "def test_doctests():\n    assert doctest.testmod(toolz).failed == 0\n\n\n"
        "@given(strategies.integers())\ndef test_any(n):\n    assert toolz.identity(n) == 3\n\n\n"
        "def test_identity():\n    assert toolz.identity(3) == 3\n\n\n"
        "def test_monkey_module():\n    this_module = sys.modules[__name__]\n    assert toolz.monkey(this_module).f(21) == 42\n\n\n"
        "class Referrers(unittest.TestCase):\n    def test_no_cycle(self):\n        self.assertEqual(len(gc.get_referrers(toolz)), 1)\n\n"
        "    def test_same(self):\n        self.assertEqual(toolz.identity(2), 2)\n"
    )  # fmt: skip
    for seed in range(60):
        made = canaries.must_fail(random.Random(seed), module, "test_made")
        assert made is not None and "def test_made():\n    assert toolz.identity(3) ==" in made, made
        method = canaries.must_fail_method(random.Random(seed), module, "test_made")
        assert method is not None and "def test_made(self):\n        self.assertEqual(toolz.identity(2)," in method[0], method
    assert canaries.must_fail(random.Random(0), module.replace("def test_identity", "def helper"), "test_made") is None


def test_canaries_take_real_names_and_sit_in_real_folders():
    rng = random.Random(5)
    planned = canaries.plan(rng, folders=["03-tags"], present={"03-tags": {"test_tags.py"}},
                            file_names=["test_tags.py", "test_due.py", "test_search.py"],
                            test_names=["test_due_dates_sort", "test_search_is_case_blind"], in_run={"test_tags_are_kept"},
                            modules=[MODULE])  # fmt: skip
    modules = {}
    for canary in planned:
        modules.setdefault(canary.path, set()).add(canary.expected)
    assert sorted(map(sorted, modules.values())) == [["failed"], ["failed"], ["passed"]]  # two must-fail modules
    assert all(c.path.startswith("03-tags/") and c.path != "03-tags/test_tags.py" for c in planned)
    for path in (path for path, kinds in modules.items() if kinds == {"failed"}):
        # several tests, as a real module holds (one alone told a canary apart), each of them must fail
        tests = [c.test for c in planned if c.path == path]
        source = next(c.source for c in planned if c.path == path)
        assert len(tests) > 1 and all(source.count(f"def {test}(") == 1 for test in tests)
        for test in tests:
            assert not run_canary(source, test, 201)
    for canary in planned:
        if canary.expected == "passed":
            namespace: dict = {}
            exec(canary.source, namespace)
            namespace[canary.test]()  # passes


UNITTEST_MODULE = '''"""Carts, unittest style."""
import unittest

from shop import cart  # the product


class Contract:
    def test_inherited(self):
        self.assertTrue(True)


class CartBehaviour(Contract, unittest.TestCase):
    LIMIT = 3

    def setUp(self):
        self.cart = cart.Cart()

    def test_total(self):
        self.cart.add("tea", 3)
        self.assertEqual(self.cart.total(), 3)

    def test_names(self):
        self.assertIn("tea", self.cart.names())
'''


def _run_unittest_canary(source: str, test: str, total, names) -> bool:
    import unittest

    class Cart:
        def add(self, name, price):
            pass

        def total(self):
            return total

        def names(self):
            return names

    namespace = {"__name__": "canary"}
    exec(compile(source.replace("from shop import cart  # the product", ""), "canary", "exec"), namespace)
    namespace["cart"] = type("cart", (), {"Cart": Cart})
    cls_name, method = test.split("::")
    result = unittest.TestResult()
    namespace[cls_name](method).run(result)
    return result.wasSuccessful() and result.testsRun == 1


@pytest.mark.parametrize("seed", range(12))
def test_a_canary_from_a_unittest_class_fails_for_honest_code_and_passes_for_values_equal_to_anything(seed):
    found = canaries.must_fail_method(random.Random(seed), UNITTEST_MODULE, "test_labels_survive")
    assert found is not None
    source, test = found
    assert test == "CartBehaviour::test_labels_survive" and "def setUp(self):" in source and "class Contract:" in source
    assert source.count("def test_") == 2  # the mixin's, and the canary: no other test of the class
    assert not _run_unittest_canary(source, test, 3, ["tea"])  # honest: the real test would pass
    assert _run_unittest_canary(source, test, EqualsAnything(), EqualsAnything())
