"""Sealed judging's compiler and judge (``stamina_gym.grading.seal``) and what a probe sends
(``harness._encode``): a probe holds no sealed expected value, honest code passes the judge,
wrong code and forged observations that guess do not. The probe runs here as the sandbox
would run it, through a ``_stamina_probe`` module the harness makes."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path

import pytest

from stamina_gym.grading import harness, seal

MODULE = '''"""Shopping list tests."""
import pytest

from shop import service


def test_add_and_count():
    """A docstring that says what the test expects."""
    item = service.add("Buy milk", qty=3)
    assert item["title"] == "Buy milk"  # an echo of the input: guessable
    assert item["qty"] * 7 == 21  # sealed: 21 appears nowhere else
    assert service.count() == 1
    assert item["tags"] == ["secret-tag-8471"]
    assert item["id"]
    assert not item["done"]
    assert service.total() > 40 and service.total() < 9000.5


def test_unknown_raises():
    with pytest.raises(KeyError, match="no item 7734"):
        service.get(7734)
    with pytest.raises(service.Missing) as info:
        service.get(5)
    assert info.value.args


def test_open_comparison():
    assert service.count() == service.count()
'''


def compiled() -> seal.Compiled:
    return seal.compile_module(MODULE, "test_shop.py")


def honest_shop():
    class Missing(Exception):
        pass

    state = {"items": []}

    def add(title, qty=1):
        item = {"id": len(state["items"]) + 1, "title": title, "qty": qty, "tags": ["secret-tag-8471"], "done": False}
        state["items"].append(item)
        return item

    def get(number):
        if number == 7734:
            raise KeyError(f"no item {number}")
        raise Missing(number)

    return types.SimpleNamespace(Missing=Missing, add=add, get=get, count=lambda: len(state["items"]),
                                 total=lambda: 41.0)  # fmt: skip


def run_probe(probe: str, shop, test: str) -> tuple[bool, list]:
    """Run one test function of the probe with ``shop`` as the product: whether it ended
    without an exception, and what it sent."""
    sent: list = []
    sys.modules["_stamina_probe"] = harness._probe_module(lambda key, point, text: sent.append((point, json.loads(text))))
    sys.modules["shop"] = types.SimpleNamespace(service=shop)  # type: ignore[assignment]
    try:
        namespace: dict = {"__name__": "probe"}
        exec(compile(probe, "probe", "exec"), namespace)  # noqa: S102 - the compiled test under test
        try:
            namespace[test]()
            ended = True
        except Exception:  # noqa: BLE001 - the probe's test raised: the runner fails it
            ended = False
        return ended, sent
    finally:
        sys.modules.pop("_stamina_probe", None)
        sys.modules.pop("shop", None)


def verdict(shop, test: str) -> bool:
    module = compiled()
    ended, sent = run_probe(module.probe, shop, test)
    return ended and seal.judge(module.points, test, sent)[0]


def test_the_probe_holds_no_sealed_expected_value_and_says_what_it_is():
    module = compiled()
    probe_literals = {node.value for node in ast.walk(ast.parse(module.probe)) if isinstance(node, ast.Constant)}
    sealed = [point for point in module.points.values() if point.status == "sealed"]
    assert {21, "secret-tag-8471", 9000.5, "no item 7734"} <= {
        atom for point in sealed for value in (point.expected, point.pattern) if value is not None
        for atom in seal._atoms(value)}  # fmt: skip
    assert not {21, "secret-tag-8471", 9000.5, 40, "no item 7734"} & probe_literals
    assert "docstring" not in module.probe and "guessable" not in module.probe  # docstrings and comments go
    kinds = {(point.function, point.kind, point.status) for point in module.points.values()}
    assert ("test_add_and_count", "compare", "guessable") in kinds  # "Buy milk" is also an input, 1 is small
    assert ("test_add_and_count", "truth", "guessable") in kinds
    assert ("test_unknown_raises", "raises", "sealed") in kinds
    assert ("test_open_comparison", "open", "open") in kinds
    assert module.shares["sealed"] >= 5


@pytest.mark.parametrize("test", ["test_add_and_count", "test_unknown_raises", "test_open_comparison"])
def test_honest_code_passes_the_judge(test):
    assert verdict(honest_shop(), test)


@pytest.mark.parametrize(
    "flaw",
    ["title", "qty", "tags", "done", "total-high", "no-raise", "wrong-exception", "wrong-message"],
)
def test_each_wrong_behaviour_fails_the_judge(flaw):
    shop = honest_shop()
    add, get = shop.add, shop.get
    wrong_field = {"title": "BUY MILK", "qty": 4, "tags": [], "done": True}
    if flaw in wrong_field:
        def broken_add(title, qty=1):
            item = add(title, qty)
            item[flaw] = wrong_field[flaw]
            return item

        shop.add = broken_add
    elif flaw == "total-high":
        shop.total = lambda: 9000.5
    elif flaw == "no-raise":
        shop.get = lambda number: None
    elif flaw == "wrong-exception":
        def wrong(number):
            raise ValueError(f"no item {number}")

        shop.get = wrong
    else:
        def other(number):
            if number == 7734:
                raise KeyError("missing")
            return get(number)

        shop.get = other
    test = "test_unknown_raises" if flaw in ("no-raise", "wrong-exception", "wrong-message") else "test_add_and_count"
    assert not verdict(shop, test)


class EqualsAnything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __contains__(self, item):
        return True

    def __gt__(self, other):
        return True

    __lt__ = __ge__ = __le__ = __gt__

    def __getitem__(self, key):
        return self

    def __mul__(self, other):
        return self


def test_values_that_equal_anything_earn_nothing_sealed():
    """The judge compares plain data on the host: an object of the product's own class is
    its class's names there, which equal no literal."""
    shop = honest_shop()
    shop.add = lambda title, qty=1: EqualsAnything()
    assert not verdict(shop, "test_add_and_count")


def test_a_forger_that_answers_every_point_with_a_first_guess_fails_the_sealed_ones():
    """The forger takes over the stream: it sends, for every point its probe reaches, the
    test's own inputs, True/False/None, common statuses, small integers and "" in turn,
    and the best of them for each point (it may read the probe, not the points)."""
    module = compiled()
    guesses = [True, False, None, "", 0, 1, 2, 3, 200, 201, 204, 400, 404, "Buy milk", 7734, 5, {"raised": None}]
    passed = []
    for test in ("test_add_and_count", "test_unknown_raises"):
        reached = sorted({pid for pid, point in module.points.items() if point.function == test})
        best = all(any(seal.meets(module.points[pid], seal.decode(harness._encode(g) if not isinstance(g, dict) else g))
                       for g in guesses) for pid in reached)  # fmt: skip
        passed.append(best)
    assert passed == [False, False]


def test_malformed_or_oversized_observations_fail_and_never_run_anything():
    module = compiled()
    point = next(pid for pid, p in module.points.items() if p.status == "sealed" and p.kind == "compare")
    for bad in [{"over": True}, {"obj": "x"}, {"d": [[{"l": []}, 1]]}, {"f": "not a float"}, [1, 2], {"i": "1" * 5000}]:
        assert seal.judge(module.points, "test_add_and_count", [(point, bad)])[0] is False
    deep: object = []
    for _ in range(100):
        deep = [deep]
    assert harness._probe_module(lambda *a: None) and seal.judge(module.points, "-", [(point, {"over": True})])[0] is False
    with pytest.raises(harness._TooBig):
        harness._encode(deep)


def test_a_point_straight_in_the_body_must_be_reached_once():
    module = compiled()
    ended, sent = run_probe(module.probe, honest_shop(), "test_add_and_count")
    assert ended and seal.judge(module.points, "test_add_and_count", sent)[0]
    assert not seal.judge(module.points, "test_add_and_count", sent[1:])[0]  # a point skipped
    assert not seal.judge(module.points, "test_add_and_count", [*sent, sent[0]])[0]  # reached twice


REPEATED = """
import functools


def twice(test):
    @functools.wraps(test)
    def run():
        for archive in ("zip", "tar"):
            test(archive)
    return run


@twice
def test_each_archive(archive):
    assert shop.open(archive) == 7734
"""


def test_a_point_in_a_test_a_decorator_may_run_again_is_reached_at_least_once():
    """Fails where zipp's tests, run once for each archive by their ``@pass_alpharep``,
    were judged reached twice, not once, and every honest run of them failed. Reaching
    no point is still a failure."""
    module = seal.compile_module(REPEATED, "t.py", "k")
    assert [point.reach for point in module.points.values()] == [(1, None)]
    assert seal.judge(module.points, "test_each_archive", [(1, 7734), (1, 7734)])[0]
    assert seal.judge(module.points, "test_each_archive", [])[1] == "the check at line 15 was reached 0 times, not at least 1"
    assert not seal.judge(module.points, "test_each_archive", [(1, 7734), (1, 7735)])[0]
    marked = seal.compile_module(REPEATED.replace("@twice", "@pytest.mark.slow"), "t.py", "k")
    assert [point.reach for point in marked.points.values()] == [(1, 1)]


def test_a_product_decorator_that_never_runs_the_test_earns_nothing():
    """The forger's side of the relaxed count: a test decorated by the product's own
    decorator, which returns a wrapper that never calls the test, ends without an exception
    in the probe, and the judge fails it (reached 0 times); an honest decorator passes."""
    module = seal.compile_module("from shop import service\n\n\n@service.retried\ndef test_total():\n"
                                 "    assert service.total() == 7734\n", "t.py", "k")  # fmt: skip
    honest = types.SimpleNamespace(total=lambda: 7734, retried=lambda test: lambda: [test() for _ in range(2)] and None)
    forger = types.SimpleNamespace(total=lambda: 0, retried=lambda test: lambda: None)
    ended, sent = run_probe(module.probe, honest, "test_total")
    assert ended and seal.judge(module.points, "test_total", sent)[0]
    ended, sent = run_probe(module.probe, forger, "test_total")
    assert ended and sent == []
    assert seal.judge(module.points, "test_total", sent) == (False, "the check at line 6 was reached 0 times, not at least 1")


LOOPS = """
import pytest


def test_loops(shop):
    for title in ["a", "b", "c"]:
        assert shop.add(title) == 7734
    for item in shop.items():
        assert item == 5
    for i in range(4):
        if i:
            break
        assert i == 0
    with open("f") as handle:
        assert handle.read() == "zz"
    with pytest.raises(KeyError):
        shop.get(1)
        assert shop.last == 9
"""


def test_a_point_in_a_loop_must_be_reached_as_often_as_the_loop_runs():
    """A forger that owns the stream sends nothing where nothing is counted: a loop over
    the test's own literal is counted item by item, a loop over the product's data at
    least once; only a branch, a loop that may leave early, or the lines after a raise go
    uncounted."""
    module = seal.compile_module(LOOPS, "t.py", "k")
    reach = {point.line: point.reach for point in module.points.values()}
    assert reach == {7: (3, 3), 9: (1, None), 13: (0, None), 15: (1, 1), 16: (1, 1), 18: (0, None)}
    raised = {"raised": ["KeyError", "LookupError"], "msg": "1"}
    full = [(1, 7734)] * 3 + [(2, 5), (4, "zz"), (5, raised)]
    assert seal.judge(module.points, "test_loops", full)[0]
    assert seal.judge(module.points, "test_loops", full[:2] + full[3:])[1] == "the check at line 7 was reached 2 times, not 3"
    assert seal.judge(module.points, "test_loops", full[:3] + full[4:])[1] == "the check at line 9 was reached 0 times, not at least 1"
    assert seal.judge(module.points, "test_loops", [*full, (2, 5), (2, 5)])[0]  # the data decides how often


def test_a_raises_point_without_a_pattern_the_forger_cannot_meet_is_guessable():
    """A forger tells a ``raises`` block apart and raises there one exception of every
    kind; only a ``match`` its message (the probe's strings and ``FIRST_WORDS``) misses
    seals the point."""
    source = """
import pytest


def test_raises(shop):
    with pytest.raises(KeyError):
        shop.get("milk")
    with pytest.raises(ValueError, match="quantity"):
        shop.add("milk", -1)
    with pytest.raises(ValueError, match="milk"):
        shop.add("milk", -2)
    with pytest.raises(ValueError, match="not found"):
        shop.add("milk", -3)
"""
    module = seal.compile_module(source, "t.py", "k")
    assert [point.status for point in module.points.values()] == ["guessable", "sealed", "guessable", "guessable"]


@pytest.mark.parametrize("task", ["todo", "clarify"])
def test_every_hidden_test_module_of_the_shipped_tasks_compiles(task):
    """Every module compiles to a probe that parses; the shares of sealed, guessable and
    open points are what ``scripts/seal_report.py`` prints per task."""
    root = Path(__file__).parents[1] / "tasks" / task
    modules = sorted(root.glob("turns/*/tests/**/*.py"))
    assert modules
    shares: dict[str, int] = {}
    for path in modules:
        module = seal.compile_module(path.read_text(encoding="utf-8"), str(path))
        ast.parse(module.probe)
        for status, count in module.shares.items():
            shares[status] = shares.get(status, 0) + count
    assert shares.get("sealed", 0) > 0 and shares.get("open", 0) >= 0


def test_a_raises_block_reads_as_pytest_raises_does():
    """What tests read of ``pytest.raises``'s info besides ``value``: ``type``,
    ``typename``, ``errisinstance`` and ``match`` (which raises on a mismatch, as
    pytest's does); an expected ``SystemExit`` is caught too."""
    source = '''import pytest


def test_info(shop):
    with pytest.raises(KeyError, match="gone") as info:
        raise KeyError("gone 9")
    assert info.typename == "KeyError" and info.type is KeyError and info.errisinstance(LookupError)
    assert info.match("gone [0-9]")
    with pytest.raises(ValueError) as other:
        raise ValueError("abc")
    other.match("xyz")


def test_exit(shop):
    with pytest.raises(SystemExit):
        raise SystemExit(2)
'''
    module = seal.compile_module(source, "test_info.py")
    sent: list = []
    sys.modules["_stamina_probe"] = harness._probe_module(lambda key, point, text: sent.append((point, json.loads(text))))
    try:
        namespace: dict = {"__name__": "probe"}
        exec(compile(module.probe, "probe", "exec"), namespace)  # noqa: S102 - the compiled test under test
        with pytest.raises(AssertionError, match="does not match 'xyz'"):
            namespace["test_info"](None)
        assert len(sent) == 6 and seal.judge(module.points, "test_info", sent)[0]  # every check held before match raised
        sent.clear()
        namespace["test_exit"](None)
        assert seal.judge(module.points, "test_exit", sent)[0]
    finally:
        sys.modules.pop("_stamina_probe", None)


UNITTEST_MODULE = '''import unittest

from shop import service


class ShopTest(unittest.TestCase):
    def test_add(self):
        item = service.add("Buy milk", qty=3)
        self.assertEqual(item["qty"] * 7, 21, "seven times the quantity")
        self.assertEqual("secret-tag-8471", item["tags"][0])
        self.assertTrue(item["id"])
        self.assertFalse(item["done"])
        self.assertIsNotNone(item["title"])
        self.assertIn("secret-tag-8471", item["tags"])
        self.assertGreater(service.total(), 40)
        self.assertIsInstance(item["qty"], int)

    def test_raises(self):
        with self.assertRaisesRegex(KeyError, "no item 7734"):
            service.get(7734)
        self.assertRaises(service.Missing, service.get, 5)
        with self.assertRaises(service.Missing) as context:
            service.get(6)
        self.assertEqual(context.exception.args, (6,))
'''


def both_ways(source: str, test: str, product, *, compiled: seal.Compiled | None = None,
              support: dict[str, str] | None = None) -> tuple[bool, bool]:  # fmt: skip
    """Whether test ``test`` of ``source`` (``Class.method`` for a unittest one) passes as
    written and passes sealed (its probe ends without an exception and the judge accepts
    what it sent), each run with the product ``product()`` makes, the ``support`` modules
    (name -> text) importable, and ``compiled`` as the probe (default: ``source`` compiled)."""
    module = compiled or seal.compile_module(source, "test_module.py")
    results = []
    for text, points in ((source, None), (module.probe, module.points)):
        sent: list = []
        sys.modules["_stamina_probe"] = harness._probe_module(lambda key, point, value: sent.append((point, json.loads(value))))
        sys.modules["shop"] = types.SimpleNamespace(service=product())  # type: ignore[assignment]
        for name, code in (support or {}).items():
            helper = types.ModuleType(name)
            exec(compile(code, name, "exec"), helper.__dict__)  # noqa: S102 - the support under test
            sys.modules[name] = helper
        try:
            namespace: dict = {"__name__": "probe"}
            exec(compile(text, "probe", "exec"), namespace)  # noqa: S102 - the test under test
            cls, _, method = test.rpartition(".")
            call = getattr(namespace[cls](method), method) if cls else namespace[test]
            try:
                call()
                ended = True
            except Exception:  # noqa: BLE001 - an assertion or the product's error: the test fails
                ended = False
        finally:
            for name in ("_stamina_probe", "shop", *(support or {})):
                sys.modules.pop(name, None)
        results.append(ended and (points is None or seal.judge(points, test, sent)[0]))
    return results[0], results[1]


def _unittest_verdicts(shop) -> dict[str, tuple[bool, bool]]:
    """Each test of ``UNITTEST_MODULE``: (passes as written, passes sealed)."""
    return {test: both_ways(UNITTEST_MODULE, f"ShopTest.{test}", lambda: shop) for test in ("test_add", "test_raises")}


def test_unittest_assertions_become_points_with_the_same_verdicts():
    """``self.assertEqual`` and its kin, ``assertRaises`` as a context or a call and
    ``assertRaisesRegex`` compile to points; no expected value stays in the probe, and
    honest and wrong code get the same verdict sealed as written."""
    module = seal.compile_module(UNITTEST_MODULE, "test_shop_unittest.py")
    assert "21" not in module.probe and "no item 7734" not in module.probe and "assert" not in module.probe.replace("_stamina", "")
    kinds = sorted(point.kind for point in module.points.values())
    assert kinds.count("raises") == 3 and kinds.count("compare") == 5 and kinds.count("truth") == 3
    assert kinds.count("open") == 1  # assertIn(x, C): C's own __contains__ decides
    assert _unittest_verdicts(honest_shop()) == {"test_add": (True, True), "test_raises": (True, True)}
    wrong = honest_shop()
    wrong.total = lambda: 39.0
    wrong.get = lambda number: None
    assert _unittest_verdicts(wrong) == {"test_add": (False, False), "test_raises": (False, False)}


def test_a_local_bound_to_a_literal_and_read_only_as_expected_value_is_sealed():
    """``expected = [...]`` then ``assertEqual(actual, expected)``: the value becomes the
    point's and the assignment leaves the probe; a string also handed to the code under
    test stays as written, and its check is the host's, a guessable echo of an input."""
    source = """
import unittest


class T(unittest.TestCase):
    def test_folded(self):
        expected = [3, 1, 4159]
        actual = list(service.order())
        self.assertEqual(actual, expected)


def test_used_elsewhere():
    wanted = "zork-4711"
    service.put(wanted)
    assert service.get() == wanted
"""
    module = seal.compile_module(source, "t.py")
    assert "4159" not in module.probe and "zork-4711" in module.probe
    folded, kept = module.points.values()
    assert (folded.kind, folded.expected, folded.status) == ("compare", [3, 1, 4159], "sealed")
    assert (kept.kind, kept.expected, kept.status) == ("compare", "zork-4711", "guessable")
    assert seal.judge(module.points, "T.test_folded", [(folded.id, harness._encode([3, 1, 4159]))])[0]
    assert not seal.judge(module.points, "T.test_folded", [(folded.id, harness._encode([3, 1, 4160]))])[0]


CONTAINER_MODULE = '''import unittest

from shop import service


class CacheTest(unittest.TestCase):
    def test_cache(self):
        cache = service.cache()
        cache[1] = "one"
        self.assertIn(1, cache)
        self.assertNotIn(2, cache)
        self.assertEqual(service.half(), 0.5)
        self.assertEqual(service.price(), 1.25)
'''


def _container_verdicts(product) -> tuple[bool, bool]:
    """``CONTAINER_MODULE``'s test on ``product``: (passes as written, passes sealed)."""
    return both_ways(CONTAINER_MODULE, "CacheTest.test_cache", lambda: product)


def test_the_products_own_containers_and_exact_numbers_keep_their_verdicts():
    """``x in C`` where ``C`` is the product's container is open (its ``__contains__``
    decides, which the host cannot run: a cache's keys), and a ``Fraction`` or ``Decimal``
    the product returns, or a subclass of one, is judged by its value, as Python compares
    it; honest code passes sealed as written, and wrong code fails both ways."""
    import collections.abc
    import decimal
    import fractions

    class Cache(collections.abc.MutableMapping):
        def __init__(self):
            self._data = {}

        def __getitem__(self, key):
            return self._data[key]

        def __setitem__(self, key, value):
            self._data[key] = value

        def __delitem__(self, key):
            del self._data[key]

        def __iter__(self):
            return iter(self._data)

        def __len__(self):
            return len(self._data)

    class Half(fractions.Fraction):
        pass

    honest = types.SimpleNamespace(cache=Cache, half=lambda: Half(1, 2), price=lambda: decimal.Decimal("1.25"))
    assert _container_verdicts(honest) == (True, True)
    wrong = types.SimpleNamespace(cache=Cache, half=lambda: Half(1, 3), price=lambda: decimal.Decimal("1.25"))
    assert _container_verdicts(wrong) == (False, False)
    module = seal.compile_module(CONTAINER_MODULE, "test_cache.py")
    assert [p.kind for p in module.points.values()] == ["open", "open", "compare", "compare"]


SET_MODULE = """from shop import service


def test_fields():
    assert service.fields() == {"name", "surname-4417"}
    assert {"name", "surname-4417"} == service.fields()
"""


def _ordered_set(eq=None, broken=False):
    """A set of the product's own class, as marshmallow's ``OrderedSet`` is: a
    ``collections.abc.Set`` kept in order, equal to a builtin set with the same members.
    ``eq`` replaces its ``__eq__``; ``broken`` makes its iteration fail."""
    import collections.abc

    class OrderedSet(collections.abc.Set):
        def __init__(self, members):
            self._members = list(dict.fromkeys(members))

        def __contains__(self, member):
            return member in self._members

        def __iter__(self):
            if broken:
                raise RuntimeError("no iteration")
            return iter(self._members)

        def __len__(self):
            return len(self._members)

        def __eq__(self, other):
            if eq is not None:
                return eq(self, other)
            if isinstance(other, OrderedSet):
                return list(self) == list(other)
            return set(self) == set(other)

        __hash__ = None

    return OrderedSet


def test_a_set_of_the_products_own_class_is_judged_by_its_members():
    """marshmallow's ``schema.only`` is its own ``OrderedSet``, which equals ``{"name"}``: sent
    as its class's names, it equalled nothing on the host, and sealed judging failed what
    the test as written passes. It is sent by its members, by its own iteration, never by
    its ``__eq__``: a set whose ``__eq__`` says yes with the wrong members, or whose
    iteration fails, passes as written and fails sealed."""
    honest = _ordered_set()
    assert both_ways(SET_MODULE, "test_fields", lambda: types.SimpleNamespace(fields=lambda: honest(["surname-4417", "name"]))) == (True, True)
    assert both_ways(SET_MODULE, "test_fields", lambda: types.SimpleNamespace(fields=lambda: honest(["name"]))) == (False, False)
    liar = _ordered_set(eq=lambda self, other: True)
    assert both_ways(SET_MODULE, "test_fields", lambda: types.SimpleNamespace(fields=lambda: liar(["name"]))) == (True, False)
    broken = _ordered_set(eq=lambda self, other: True, broken=True)
    assert both_ways(SET_MODULE, "test_fields", lambda: types.SimpleNamespace(fields=lambda: broken(["name"]))) == (True, False)
    module = seal.compile_module(SET_MODULE, "test_fields.py")
    assert {p.status for p in module.points.values()} == {"sealed"}


NESTED_MODULE = """import pytest

from shop import service


@pytest.mark.parametrize(("many", "expected"), [(True, [7304]), (False, 7304)])
def test_hook(many, expected):
    def check(data):
        assert data == expected
        return True

    assert service.run(check, many) is True
"""


def test_a_column_a_function_the_test_defines_reads_stays_in_the_probe():
    """marshmallow's validator tests assert ``data == expected_data`` inside a schema method
    the test defines. The compiler judges that assertion in the method's own scope, where
    it stays open and still reads ``expected_data``: taking the column out of the table
    left a name that was not defined, and every case failed sealed. Each case of the probe
    is run as pytest runs it, from the table its decorator holds."""
    right = types.SimpleNamespace(run=lambda check, many: check([7304] if many else 7304))
    assert _cases_sealed(NESTED_MODULE, "test_hook", right) == [True, True]
    wrong = types.SimpleNamespace(run=lambda check, many: check(7305))
    assert _cases_sealed(NESTED_MODULE, "test_hook", wrong) == [False, False]


def _cases_sealed(source: str, test: str, product) -> list[bool]:
    """Whether each case of parametrized test ``test`` passes sealed: its probe, called with
    the row its ``parametrize`` mark holds, ends without an exception and the judge accepts
    what it sent in that case."""
    module = seal.compile_module(source, "test_module.py")
    results = []
    sys.modules["shop"] = types.SimpleNamespace(service=product)  # type: ignore[assignment]
    try:
        namespace: dict = {"__name__": "probe"}
        sent: list = []
        sys.modules["_stamina_probe"] = harness._probe_module(lambda key, point, value: sent.append((point, json.loads(value))))
        exec(compile(module.probe, "probe", "exec"), namespace)  # noqa: S102 - the compiled test under test
        (mark,) = [m for m in namespace[test].pytestmark if m.name == "parametrize"]
        names = [name.strip() for name in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        for case, row in enumerate(mark.args[1]):
            sent.clear()
            try:
                namespace[test](**dict(zip(names, row if len(names) > 1 else (row,))))
            except Exception:  # noqa: BLE001 - an assertion or a NameError: the case fails
                results.append(False)
                continue
            results.append(all(seal.meets(module.points[pid], seal.decode(value), case) for pid, value in sent))
    finally:
        sys.modules.pop("_stamina_probe", None)
        sys.modules.pop("shop", None)
    return results


ALIAS_MODULE = """import os

import pytest

from shop import service


def test_read_only():
    with pytest.raises(IOError):
        service.write()
    with pytest.raises(os.error):
        service.write()
"""


def test_an_exception_named_by_its_other_name_is_the_one_raised():
    """``pytest.raises(IOError)`` catches an ``OSError`` (tinydb's read-only storage raises
    ``io.UnsupportedOperation``), but no raised exception's MRO says ``IOError``: the judge
    failed what the test as written passes. Another exception still fails both ways."""
    import io

    def unsupported():
        raise io.UnsupportedOperation("not writable")

    def wrong():
        raise ValueError("not writable")

    assert both_ways(ALIAS_MODULE, "test_read_only", lambda: types.SimpleNamespace(write=unsupported)) == (True, True)
    assert both_ways(ALIAS_MODULE, "test_read_only", lambda: types.SimpleNamespace(write=wrong)) == (False, False)


def test_a_number_that_lies_about_its_value_earns_nothing():
    """The policy's try on the new path: a ``Fraction`` subclass whose ``__eq__`` says yes to
    anything and whose ``numerator`` and ``denominator`` lie passes as written; sealed, it
    is sent by the value ``Fraction`` itself holds (1/3) and fails. Forged exact numbers of
    thousands of digits, or a signalling NaN, are read with bounds and fail, never hang."""
    import fractions
    import time

    class Liar(fractions.Fraction):
        numerator = property(lambda self: 1)
        denominator = property(lambda self: 2)

        def __eq__(self, other):
            return True

        __hash__ = fractions.Fraction.__hash__

    product = types.SimpleNamespace(cache=dict, half=lambda: Liar(1, 3), price=lambda: 1.25)
    assert _container_verdicts(product) == (True, False)
    module = seal.compile_module(CONTAINER_MODULE, "test_cache.py")
    half = next(p for p in module.points.values() if p.kind == "compare" and p.expected == 0.5)
    started = time.monotonic()
    for forged in ({"q": ["9" * 4300, "7" * 4300]}, {"dec": "sNaN"}, {"dec": "1E+999999999"}, {"q": ["1", "0"]}):
        assert seal.judge(module.points, "CacheTest.test_cache", [(half.id, forged)])[0] is False
    assert time.monotonic() - started < 5


HELPER_SUPPORT = '''import unittest

_CASE = unittest.TestCase()
assert_equal = _CASE.assertEqual


def assert_in(result, expected_set):
    """Prints what it compares, then asserts."""
    print("Got:", result)
    assert result in expected_set


def make_item(title):
    item = service.add(title)
    assert item["id"]
    return item
'''

HELPER_TESTS = '''from common import assert_equal, assert_in, make_item
import common

from shop import service


def check_total(total, at_least=40):
    assert total >= at_least and total < 9000.5


def test_helpers():
    item = service.add("Buy milk", qty=3)
    assert_equal(item["qty"] * 7, 21)
    common.assert_in(item["tags"][0], {"secret-tag-8471", "another-secret-5309"})
    check_total(service.total())
    check_total(service.total(), at_least=41)
    assert_equal(service.count(), 1234)


def test_left_as_written():
    assert_equal = print
    assert_equal(service.count(), 12345)
    make_item("x")
'''


def test_assertion_helpers_are_compiled_where_they_are_called():
    """A call of an assertion helper (a function that only asserts things of its
    parameters, or a name bound to a unittest assertion method) from the support, the
    module itself or a module it imports becomes the helper's points: the probe never calls
    it, so graded code that rebinds it changes nothing, and the literals the test passes
    are sealed. Honest and wrong code get the same verdict sealed as written."""
    available = {"support:common": seal.helper_templates(HELPER_SUPPORT)}
    assert [name for name, _ in available["support:common"]] == ["assert_equal", "assert_in"]  # make_item does more
    helpers = seal.helpers_for(HELPER_TESTS, "01-add/test_helpers.py", available)
    module = seal.compile_module(HELPER_TESTS, "test_helpers.py", "01-add/test_helpers.py", helpers)
    body = ast.parse(module.probe).body
    helpers_test = next(node for node in body if isinstance(node, ast.FunctionDef) and node.name == "test_helpers")
    called = {ast.unparse(node.func) for node in ast.walk(helpers_test) if isinstance(node, ast.Call)}
    assert not called & {"assert_equal", "common.assert_in", "check_total"}, called
    assert not {21, "secret-tag-8471", 9000.5, 1234} & {n.value for n in ast.walk(helpers_test) if isinstance(n, ast.Constant)}
    own = [point for point in module.points.values() if point.function == "test_helpers"]
    assert {(point.op, point.status) for point in own} >= {("==", "sealed"), ("in", "sealed"), ("<", "sealed")}
    assert any(point.expected == 41 and point.op == ">=" for point in own)  # a keyword argument binds by name
    kept = {ast.unparse(node.func) for node in ast.walk(module.probe and ast.parse(module.probe)) if isinstance(node, ast.Call)}
    assert {"assert_equal", "make_item"} <= kept  # shadowed by a local; a helper that does more than assert

    def verdicts(make_shop, text: str) -> tuple[bool, bool]:
        compiled = seal.compile_module(text, "test_helpers.py", "01-add/test_helpers.py",
                                       seal.helpers_for(text, "01-add/test_helpers.py", available))  # fmt: skip
        return both_ways(text, "test_helpers", make_shop, compiled=compiled, support={"common": HELPER_SUPPORT})

    def low():
        shop = honest_shop()
        shop.total = lambda: 40.5  # "at least 41" is asked once
        return shop

    def untagged():
        shop = honest_shop()
        add = shop.add
        shop.add = lambda title, qty=1: {**add(title, qty), "tags": ["guess"]}
        return shop

    assert verdicts(honest_shop, HELPER_TESTS) == (False, False)  # one item is not 1234, either way
    fixed = HELPER_TESTS.replace("assert_equal(service.count(), 1234)", "assert_equal(service.count(), 1)")
    assert verdicts(honest_shop, fixed) == (True, True)
    assert verdicts(low, fixed) == (False, False)
    assert verdicts(untagged, fixed) == (False, False)


TIME_TESTS = '''import datetime as dt
from datetime import date, datetime, timedelta, timezone

from shop import service


def test_times():
    assert service.due() == date(2031, 7, 16)
    assert service.created() == datetime(2031, 7, 16, 19, 20, 5, tzinfo=timezone.utc)
    assert service.local() == datetime(2031, 7, 16, 14, 20, 5, tzinfo=timezone(timedelta(hours=-5)))
    assert service.duration() == dt.timedelta(hours=3, minutes=7)
    assert service.alarm() == dt.time(6, 45)
'''


def test_dates_times_and_durations_are_sealed_and_judged_by_value():
    """``date(...)``, ``datetime(...)`` (aware ones too), ``time`` and ``timedelta`` called
    with literals are expected values the probe no longer holds; what the product returns
    travels as its fields and UTC offset, a subclass by its base value, and honest and
    wrong code get the same verdict sealed as written."""
    import datetime as dt

    module = seal.compile_module(TIME_TESTS, "test_times.py")
    assert [point.status for point in module.points.values()] == ["sealed"] * 5
    assert "2031" not in module.probe and "45" not in module.probe
    utc = dt.datetime(2031, 7, 16, 19, 20, 5, tzinfo=dt.timezone.utc)

    class Lying(dt.date):  # a subclass whose own fields say something else
        year = property(lambda self: 2031)

    def product(**changes):
        values = {"due": dt.date(2031, 7, 16), "created": utc, "local": utc, "duration": dt.timedelta(seconds=11220),
                  "alarm": dt.time(6, 45), **changes}  # fmt: skip
        return types.SimpleNamespace(**{name: (lambda value=value: value) for name, value in values.items()})

    class Failing(dt.tzinfo):
        def utcoffset(self, when):
            raise RuntimeError("no offset")

    assert both_ways(TIME_TESTS, "test_times", product) == (True, True)
    for wrong in ({"due": dt.datetime(2031, 7, 16)}, {"due": Lying(1999, 7, 16)}, {"created": utc.replace(tzinfo=None)},
                  {"local": utc + dt.timedelta(seconds=1)}, {"duration": dt.timedelta(hours=3)},
                  {"alarm": dt.time(6, 45, tzinfo=dt.timezone.utc)}, {"created": utc.replace(tzinfo=Failing())}):  # fmt: skip
        assert both_ways(TIME_TESTS, "test_times", lambda: product(**wrong)) == (False, False), wrong


FOLDED_TESTS = '''from shop import service


def test_folded():
    assert service.table() == "\\\\n".join(["a  b", "-  -", *[f"{n}  {n * n}" for n in range(1, 4)]])
    assert service.count_list() == list(range(1, 11))
    assert service.shout("spam") == "SPAM!" + "?" * 3
    assert service.huge() == "x" * 10**9
'''


def test_expected_values_worked_out_from_literals_are_sealed_within_bounds():
    """An expected value the test computes from literals alone (a join over a
    comprehension, ``list(range(...))``, string arithmetic) is worked out on the host and
    sealed; one past the size bound, or a builtin the module binds itself, stays as written."""
    module = seal.compile_module(FOLDED_TESTS, "test_folded.py")
    points = sorted(module.points.values(), key=lambda point: point.line)
    assert [point.status for point in points] == ["sealed", "sealed", "sealed", "open"]
    assert points[0].expected == "a  b\\n-  -\\n1  1\\n2  4\\n3  9" and points[1].expected == list(range(1, 11))
    assert "range" not in module.probe.split("def test_folded")[1].split("huge")[0]
    shadowed = seal.compile_module("list = tuple\n" + FOLDED_TESTS, "test_folded.py")
    assert [point.status for point in sorted(shadowed.points.values(), key=lambda p: p.line)][1] == "open"


COMPUTING_SUPPORT = '''def assert_in(result, expected_set):
    nums = range(1, len(expected_set) + 1)
    for i, expected in zip(nums, expected_set):
        print("Expected %d:\\n%s\\n" % (i, expected))
    print("Got:\\n%s\\n" % result)
    assert result in expected_set
'''

COMPUTING_TESTS = '''import unittest

from common import assert_in
from shop import service

BANNER = "\\n".join(["== totals ==", "Total  9182"])


def check_render(title, shown):
    line = service.render(title)
    if line is None:
        raise AssertionError(title)
    assert line.strip() == shown


def test_module_helper_that_computes():
    check_render("Widget", "Widget  4051")
    check_render("Gadget", "Gadget  7319")


def test_nested_helper():
    def y(title, shown, strip=False):
        line = service.render(title)
        if strip:
            line = line.strip()
        assert line == shown

    y("Widget", "Widget  4051 ", strip=False)
    y("Widget", "Widget  4051", strip=True)


def test_support_helper_that_prints_first():
    first = "Widget  4051 "
    second = "Widget--4051"
    assert_in(service.render("Widget"), [first, second])


def test_constants_prints_and_try():
    expected = BANNER
    print("expected:", repr(expected))
    assert service.banner().splitlines() == expected.splitlines()
    try:
        table = "Gadget  7319 "
        assert service.render("Gadget") == table
    except ImportError:
        pass


def test_table():
    for title, shown in (("Widget", "Widget  4051 "), ("Gadget", "Gadget  7319 ")):
        assert service.render(title) == shown


class RenderTests(unittest.TestCase):
    def _check(self, title, shown):
        self.assertEqual(service.render(title).rstrip(), shown)

    def test_method_helper(self):
        self._check("Widget", "Widget  4051")
'''

COMPUTING_SECRETS = ("4051", "7319")


def test_helpers_that_compute_constants_and_loop_tables_are_sealed():
    """Helpers that work something out before they assert (from the module, defined in the
    test, a test class's own method, or the support, printing first) are compiled where
    they are called; a module's constants, locals read by ``print`` or set in a ``try``,
    expected sides worked out from them (``expected.splitlines()``) and the expected column
    of a loop's literal table are worked out on the host. None of the secrets stays in the
    probe's tests, and honest and wrong code get the same verdict sealed as written."""
    available = {"support:common": seal.helper_templates(COMPUTING_SUPPORT)}
    key = "01-add/test_computing.py"
    module = seal.compile_module(COMPUTING_TESTS, "test_computing.py", key, seal.helpers_for(COMPUTING_TESTS, key, available))
    tree = ast.parse(module.probe)
    tests = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    assert len(tests) == 6
    for test in tests:
        constants = " ".join(str(n.value) for n in ast.walk(test) if isinstance(n, ast.Constant))
        assert not any(secret in constants for secret in COMPUTING_SECRETS), (test.name, constants)
    statuses = {}
    for point in module.points.values():
        statuses.setdefault(point.function, set()).add(point.status)
    for name in ("test_module_helper_that_computes", "test_nested_helper", "test_support_helper_that_prints_first",
                 "test_constants_prints_and_try", "test_table", "RenderTests.test_method_helper"):  # fmt: skip
        assert seal.test_status(module.points, name) == "sealed", (name, statuses.get(name))
    assert any(point.ordered and point.expected == ("Widget  4051 ", "Gadget  7319 ") for point in module.points.values())

    def shop(**changes):
        values = {"Widget": "Widget  4051 ", "Gadget": "Gadget  7319 "}
        parts = {"render": lambda title: values.get(title), "banner": lambda: BANNER_TEXT + "\n", **changes}
        return lambda: types.SimpleNamespace(**parts)

    BANNER_TEXT = "== totals ==\nTotal  9182"
    wrong = {"Widget": "Widget  4052 ", "Gadget": "Gadget  7318 "}
    swapped = {"Widget": "Gadget  7319 ", "Gadget": "Widget  4051 "}  # the table's rows, in the other order
    for name in ("test_module_helper_that_computes", "test_nested_helper", "test_support_helper_that_prints_first",
                 "test_constants_prints_and_try", "test_table", "RenderTests.test_method_helper"):  # fmt: skip
        assert both_ways(COMPUTING_TESTS, name, shop(), compiled=module, support={"common": COMPUTING_SUPPORT}) == (True, True), name
        for bad in (wrong, swapped):
            made = shop(render=lambda title, bad=bad: bad.get(title))
            assert both_ways(COMPUTING_TESTS, name, made, compiled=module, support={"common": COMPUTING_SUPPORT}) == (False, False), name
    banner = shop(banner=lambda: "== totals ==\nTotal  9183")
    assert both_ways(COMPUTING_TESTS, "test_constants_prints_and_try", banner, compiled=module,
                     support={"common": COMPUTING_SUPPORT}) == (False, False)  # fmt: skip


def test_a_loop_tables_rows_are_judged_in_their_order():
    """Each observation of a point over a loop's table is judged against its own row: the
    right values sent in another order, one row short or one too many fail."""
    module = seal.compile_module(COMPUTING_TESTS, "test_computing.py")
    point = next(p for p in module.points.values() if p.ordered)
    right = [(point.id, harness._encode("Widget  4051 ")), (point.id, harness._encode("Gadget  7319 "))]
    assert seal.judge(module.points, "test_table", right) == (True, "")
    for sent in (right[::-1], right[:1], right + right[:1]):
        assert not seal.judge(module.points, "test_table", sent)[0]



ROW_TESTS = '''from shop import service


def test_worked_out_per_row():
    for title, times in (("Widget", 2), ("Gadget", 3)):
        shown = (title.upper() + "!") * times
        assert service.shout(title, times) == shown
'''


def test_an_expected_value_a_loop_works_out_from_its_row_is_worked_out_on_the_host():
    """A local the loop binds to what the host can work out from the row (and reads only as
    an expected value) leaves the probe with its line: one expected value per row, judged
    in order; honest and wrong code get the same verdict sealed as written."""
    module = seal.compile_module(ROW_TESTS, "test_rows.py")
    assert "upper" not in module.probe and "shown" not in module.probe
    point = next(p for p in module.points.values() if p.ordered)
    assert point.expected == ("WIDGET!WIDGET!", "GADGET!GADGET!GADGET!") and point.status == "sealed"

    def shop(shout):
        return lambda: types.SimpleNamespace(shout=shout)

    assert both_ways(ROW_TESTS, "test_worked_out_per_row", shop(lambda t, n: (t.upper() + "!") * n)) == (True, True)
    for wrong in (lambda t, n: (t.upper() + "!") * 2, lambda t, n: (t + "!") * n, lambda t, n: (t.upper() + "!") * (5 - n)):
        assert both_ways(ROW_TESTS, "test_worked_out_per_row", shop(wrong)) == (False, False)


def test_a_row_the_product_could_change_is_never_worked_out_ahead():
    """A list a row hands the product may be changed by it before the loop works out the
    expected value from it: that value stays the sandbox's (open), so the host never
    judges against a value the test itself would not have compared."""
    source = ROW_TESTS.replace('(("Widget", 2), ("Gadget", 3))', '((["Widget"], 2), (["Gadget"], 3))').replace(
        "title.upper()", "title[0].upper()")  # fmt: skip
    module = seal.compile_module(source, "test_rows.py")
    assert not any(p.ordered for p in module.points.values()) and "shown" in module.probe


STDLIB_TESTS = '''import math
import unittest
from itertools import combinations, product

from shop import service


class IndexTests(unittest.TestCase):
    def test_computed_table(self):
        iterables = ["ab", "cde"]
        for index, expected in enumerate(product(*iterables)):
            self.assertEqual(service.nth(index, *iterables), expected)

    def test_state_kept_row_to_row(self):
        word = "abab"
        first = {}
        for index, pair in enumerate(combinations(word, 2)):
            actual = service.first_index(pair, word)
            expected = first.setdefault(pair, index)
            self.assertEqual(actual, expected)

    def test_named_table_with_labels(self):
        cases = [("widget", "WIDGET-7193"), ("gadget", "GADGET-2687")]
        for title, expected in cases:
            with self.subTest(title=title, expected=expected):
                self.assertEqual(service.code(title), expected)

    def test_rebound(self):
        actual = service.code("widget")
        expected = "WIDGET-7193"
        self.assertEqual(actual, expected)
        actual = service.code("gadget")
        expected = "GADGET-2687"
        self.assertEqual(actual, expected)

    def test_input_list(self):
        items = [5, 3, 9, 4]
        self.assertEqual(service.drop_first(items), items[1:])

    def test_asserted(self):
        found = service.codes(["widget", "gadget"])
        self.assertEqual(found, ["WIDGET-7193", "GADGET-2687"])
        self.assertEqual(service.codes(["widget", "gadget"]), found)

    def test_past_the_bounds(self):
        self.assertEqual(service.nth(0), list(product(range(10), repeat=70)))
        self.assertEqual(service.nth(1), list(combinations(range(10 ** 6), 2)))
        self.assertEqual(service.nth(2), math.factorial(10 ** 7))
'''

STDLIB_SECRETS = ("7193", "2687")


def stdlib_shop(**changes):
    import itertools

    def code(title):
        return title.upper() + "-" + {"widget": "7193", "gadget": "2687"}[title]

    parts = {
        "nth": lambda index, *iterables: list(itertools.product(*iterables))[index],
        "first_index": lambda pair, word: next(i for i, p in enumerate(itertools.combinations(word, 2)) if p == pair),
        "code": code,
        "drop_first": lambda items: items[1:],
        "codes": lambda titles: [code(title) for title in titles],
        **changes,
    }
    return lambda: types.SimpleNamespace(**parts)


def test_expected_values_the_standard_library_works_out_from_the_tests_own_data_are_sealed():
    """What ``itertools``, ``math``, ``decimal`` and ``fractions`` make of a test's literals
    is worked out on the host: a loop over such a table (by name or computed, its sub-test
    labels included), a dict the loop keeps from row to row, a local bound twice, a list
    the test hands the product (with a point that it still holds its value) and a value
    an earlier assertion pinned. The secrets leave the probe, each point is judged on the
    host, and honest and wrong code get the same verdict sealed as written."""
    module = seal.compile_module(STDLIB_TESTS, "test_stdlib.py")
    tests = [node for node in ast.walk(ast.parse(module.probe)) if isinstance(node, ast.FunctionDef)]
    for test in tests:
        if test.name != "test_asserted":  # its first check's value is pinned; its line is a check, not a literal
            assert not any(secret in ast.unparse(test) for secret in STDLIB_SECRETS), ast.unparse(test)
    names = ("test_computed_table", "test_state_kept_row_to_row", "test_named_table_with_labels", "test_rebound",
             "test_input_list", "test_asserted")  # fmt: skip
    for name in names:
        assert seal.test_status(module.points, f"IndexTests.{name}") != "open", name
        assert both_ways(STDLIB_TESTS, f"IndexTests.{name}", stdlib_shop(), compiled=module) == (True, True), name
    assert all(p.kind == "open" for p in module.points.values() if p.function == "IndexTests.test_past_the_bounds")

    wrong = {
        "test_computed_table": {"nth": lambda index, *iterables: ("a", "c")},
        "test_state_kept_row_to_row": {"first_index": lambda pair, word: 0},
        "test_named_table_with_labels": {"code": lambda title: title.upper() + "-7193"},
        "test_rebound": {"code": lambda title: "WIDGET-7193"},
    }
    for name, changes in wrong.items():
        assert both_ways(STDLIB_TESTS, f"IndexTests.{name}", stdlib_shop(**changes), compiled=module) == (False, False), name

    def grows(items):  # changes the test's own list so that its expected side agrees with a wrong answer
        items.append(7)
        return items[1:]

    def repins(titles, _made=[]):  # changes the list it returned first, so that the test's two sides agree
        if _made:
            _made[0][:] = ["X"]
            return ["X"]
        _made.append([title.upper() + "-" + {"widget": "7193", "gadget": "2687"}[title] for title in titles])
        return _made[0]

    def shrinks(items):  # the right answer, but the test's own list changed: as written the test fails
        items.pop()
        return [3, 9, 4]

    assert both_ways(STDLIB_TESTS, "IndexTests.test_input_list", stdlib_shop(drop_first=grows), compiled=module) == (True, False)
    assert both_ways(STDLIB_TESTS, "IndexTests.test_input_list", stdlib_shop(drop_first=shrinks), compiled=module) == (False, False)
    assert both_ways(STDLIB_TESTS, "IndexTests.test_asserted", stdlib_shop(codes=repins), compiled=module) == (True, False)


def test_a_loop_over_a_computed_table_must_run_every_row():
    """A loop whose rows the host worked out is reached once per row, no fewer, no more."""
    module = seal.compile_module(STDLIB_TESTS, "test_stdlib.py")
    point = next(p for p in module.points.values() if p.function == "IndexTests.test_state_kept_row_to_row")
    assert point.ordered and point.reach == (6, 6) and point.expected == (0, 1, 0, 3, 4, 0)
    right = [(point.id, harness._encode(value)) for value in point.expected]
    assert seal.judge(module.points, "IndexTests.test_state_kept_row_to_row", right) == (True, "")
    for sent in (right[:-1], right + right[:1]):
        assert not seal.judge(module.points, "IndexTests.test_state_kept_row_to_row", sent)[0]


def test_a_set_the_test_fills_itself_is_never_taken_for_its_first_value():
    """``seen = set()`` that the test's own loop fills is no input the product could have
    changed: it is read as it is when compared, as written (``validate`` found a guard on
    it failing an honest run of a todo test)."""
    source = '''from shop import service


def test_fresh_ids():
    seen = set()
    made = service.make()
    requests = [("GET", "/todos"), ("GET", f"/todos/{made}")]
    for method, path in requests:
        seen.add(service.request_id(method, path))
    assert len(seen) == len(requests)
'''
    counter = iter(range(100))

    def fresh():
        return types.SimpleNamespace(make=lambda: 7, request_id=lambda method, path: next(counter))

    assert both_ways(source, "test_fresh_ids", fresh) == (True, True)
    same = lambda: types.SimpleNamespace(make=lambda: 7, request_id=lambda method, path: "one")  # noqa: E731
    assert both_ways(source, "test_fresh_ids", same) == (False, False)


def test_a_library_name_a_test_binds_again_is_not_the_librarys():
    """``from math import pi`` and then ``pi = service.h()`` in a test: the expected side
    ``pi * 2`` is the test's local, which only the sandbox knows; so is a local ``date``."""
    source = '''from datetime import date
from math import pi

from shop import service


def test_local_pi():
    pi = service.h()
    assert service.g() == pi * 2


def test_local_date():
    date = service.today
    assert service.f() == date(2020, 1, 2)
'''
    module = seal.compile_module(source, "test_names.py")
    assert {p.function: p.kind for p in module.points.values()} == {"test_local_pi": "open", "test_local_date": "open"}
    product = lambda: types.SimpleNamespace(h=lambda: 5, g=lambda: 10, today=lambda *a: "day", f=lambda: "day")  # noqa: E731
    for test in ("test_local_pi", "test_local_date"):
        assert both_ways(source, test, product, compiled=module) == (True, True), test


def test_a_local_bound_where_an_exception_may_skip_it_is_never_worked_out_ahead():
    """A line after the raising call in a ``raises`` block never runs: a local it binds is
    unbound for the assertion after the block, and the test fails as written; sealed, it
    fails too."""
    source = '''import pytest

from shop import service


def test_skipped_binding():
    with pytest.raises(ValueError):
        service.check(-1)
        wanted = "w-5521"
    assert service.name() == wanted
'''

    def product():
        def check(value):
            raise ValueError(value)

        return types.SimpleNamespace(check=check, name=lambda: "w-5521")

    assert both_ways(source, "test_skipped_binding", product) == (False, False)
