"""The told-signature check (``stamina_gym.signatures``, part of ``validate``): a test
that passes an argument no told signature has room for is named; the same call passes
once a prompt gives a signature it fits; keywords are checked against the signatures of
the called name, not against any parameter of any function."""

from __future__ import annotations



from stamina_gym import signatures
from tests.conftest import mini_task

#: A test that calls ``calc.add`` with a third positional argument and a keyword.
PLANTED = '''import calc


def test_add_rounds():
    assert calc.add(2, 3, 1) == 5
    assert calc.add(2, 3, digits=1) == 5
'''

REFERENCE_AFTER = {"calc/__init__.py": '"""Tiny calculator."""\n\n\ndef add(a, b, digits=None):\n    return a + b\n'}


def _mini(tmp_path, prompts):
    return mini_task(tmp_path, {"test_add.py": PLANTED}, prompts=prompts)


def _misfits(task):
    return [(c.line, c.name, c.positional, c.keywords) for c, _ in signatures.check_turn(task, task.turns[0], REFERENCE_AFTER, {})]


def test_an_argument_no_told_signature_has_room_for_is_named(tmp_path):
    task = _mini(tmp_path, ["Add `calc.add(a, b)` returning the sum, rounded to `digits` places if given.",
                            "I need `add(a, b)` in calc: a + b, and it should round (`round(x, digits)`)."])  # fmt: skip
    assert _misfits(task) == [(5, "add", 3, ()), (6, "add", 2, ("digits",))]


def test_a_call_that_fits_a_told_signature_passes(tmp_path):
    task = _mini(tmp_path, ["Add `calc.add(a, b, digits=None)` returning the sum, rounded to `digits` places if given.",
                            "I need `add(a, b, digits=None)` in calc: a + b, rounded when digits is given."])  # fmt: skip
    assert _misfits(task) == []


def test_an_example_call_and_a_bare_star_are_read_as_signatures(tmp_path):
    task = _mini(tmp_path, ["Add `calc.add(a, b, *, digits=None)`; a call like `calc.add(2, 3, 1)` must work too.",
                            "`add(a, b)` in calc."])  # fmt: skip
    assert _misfits(task) == []
    assert signatures.told_shapes("`add(a, b, *, digits=None)`")["add"][0].positional == 2


def test_what_is_not_a_signature_tells_nothing(tmp_path):
    shapes = signatures.told_shapes("`GET /todos (paged)` and `round(x, digits)` and `list(...)`")
    assert set(shapes) == {"round", "list"}
    assert shapes["list"][0].positional is None and shapes["list"][0].keywords is None  # ``...``: no limit


def test_a_parameter_named_cls_counts_unless_it_is_a_methods_first():
    """six's ``create_unbound_method(func, cls)`` takes two arguments; a classmethod's ``cls``
    and a method's ``self`` are bound."""
    assert signatures.told_shapes("`create_unbound_method(func, cls)`")["create_unbound_method"][0].fits(2, [])
    seed = signatures.seed_shapes({"six.py": "def create_unbound_method(func, cls):\n    return func\n\n\n"
                                             "class Box:\n    @classmethod\n    def make(cls, size):\n        pass\n\n"
                                             "    def grow(self, by):\n        pass\n"})  # fmt: skip
    assert seed["create_unbound_method"][0].fits(2, []) and seed["make"][0].positional == 1 and seed["grow"][0].positional == 1


#: A test case whose own helper shares the product's name: ``self.total(1, 2, 3)`` calls the
#: mixin's method (defined in the tests' ``__init__.py``), ``calc.total(1, 2, 3)`` the product.
OWN_HELPER = '''import calc

from . import Sums


class TestTotal(Sums):
    def test_total_of_three(self):
        assert self.total(1, 2, 3) == 6
        assert calc.total(1, 2, 3) == 6


class Ledger(calc.Ledger):
    pass


def test_a_call_through_a_class_passes_the_instance():
    ledger = Ledger()
    assert Ledger.total(ledger, 1, 2) == 3
    assert Ledger.total(ledger, 1, 2, 3) == 6
'''


def test_a_call_of_the_tests_own_helper_through_self_is_not_the_products(tmp_path):
    """Fails where every ``.total(...)`` was taken for the product's: cachetools' tests call
    their mixin's ``self.cache(2)`` beside the product's ``cache``, and reach a method
    through its class with the instance first (``Cached.get.cache(cached)``)."""
    helpers = "class Sums:\n    def total(self, a, b, c):\n        return a + b + c\n"
    task = mini_task(tmp_path, {"__init__.py": helpers, "test_add.py": OWN_HELPER},
                     prompts=["Add `calc.total(a, b)` returning the sum.", "`total(a, b)` in calc: a + b."])  # fmt: skip
    reference = {"calc/__init__.py": "def total(a, b):\n    return a + b\n"}
    misfits = sorted((c.line, c.name, c.positional) for c, _ in signatures.check_turn(task, task.turns[0], reference, {}))
    assert misfits == [(9, "total", 3), (19, "total", 3)]  # through a class: the instance, then three


FOREIGN = """import os
from os import path as p
import calc
from calc import total


def test_exists(tmp_path):
    assert not os.path.exists(tmp_path / "x")
    assert not p.exists(tmp_path / "x")
    assert calc.exists() and total(1, 2) == 3
    assert calc.exists(1)
"""


def test_a_call_through_another_projects_module_is_not_the_products(tmp_path):
    """Fails where every ``.exists(...)`` was taken for the product's: tinydb's tests call
    ``os.path.exists(path)`` beside its ``Query().exists()``, and validation refused each of
    them as a call no signature fits. A call through the product's own module still counts."""
    task = mini_task(tmp_path, {"test_exists.py": FOREIGN},
                     prompts=["Add `calc.exists()` and `calc.total(a, b)`.", "`exists()` and `total(a, b)` in calc."])  # fmt: skip
    reference = {"calc/__init__.py": "def exists():\n    return True\n\n\ndef total(a, b):\n    return a + b\n"}
    misfits = sorted((c.line, c.name, c.positional) for c, _ in signatures.check_turn(task, task.turns[0], reference, {}))
    assert misfits == [(11, "exists", 1)]


def test_a_class_of_the_seed_is_called_as_its_init_takes(tmp_path):
    """Fails where a class's constructor was told only by the prompts' calls: marshmallow's
    tests call ``fields.Number(as_string=True, allow_none=True)``, which the seed's
    ``Number.__init__(self, *, as_string=False, **kwargs)`` takes, and validation refused
    it. A class with no ``__init__`` of its own takes any call; one whose ``__init__`` takes
    no such keyword still refuses it."""
    tests = ("import calc\n\n\ndef test_number():\n    assert calc.Number(as_string=True, allow_none=True)\n"
             "    assert calc.Plain(1, extra=2)\n    assert calc.Strict(1, extra=2)\n")  # fmt: skip
    task = mini_task(tmp_path, {"test_number.py": tests},
                     prompts=["`calc.Number(as_string=True)` and `calc.Strict(1)`.", "Number(as_string=True); Strict(1)."])  # fmt: skip
    seed = ("class Number:\n    def __init__(self, *, as_string=False, **kwargs):\n        self.as_string = as_string\n\n\n"
            "class Plain(Number):\n    pass\n\n\nclass Strict:\n    def __init__(self, value):\n        self.value = value\n")  # fmt: skip
    (task.seed_dir / "calc" / "__init__.py").write_text(seed)
    misfits = sorted((c.line, c.name) for c, _ in signatures.check_turn(task, task.turns[0], {"calc/__init__.py": seed}, {}))
    assert misfits == [(7, "Strict")]


def test_a_property_in_the_seed_allows_any_call_of_its_value():
    """Fails where a property was read as a method of no arguments: cachetools'
    ``TLRUCache.ttu`` is a property whose value its tests call as ``cache.ttu(None, 1, 1)``."""
    seed = signatures.seed_shapes({"ct.py": "class TLRUCache:\n    @property\n    def ttu(self):\n        return self._ttu\n\n"
                                            "    @ttu.setter\n    def ttu(self, value):\n        self._ttu = value\n\n"
                                            "    def expire(self, time=None):\n        pass\n"})  # fmt: skip
    assert all(shape.fits(3, ["key"]) for shape in seed["ttu"])
    assert not seed["expire"][0].fits(2, [])  # a method is still held to its parameters


def test_a_test_helper_that_does_not_parse_names_no_method():
    """A helper module of the tests that is no Python (a link's path, mined as text before
    links were read) is pytest's to report where it is imported; validation goes on."""
    assert signatures.test_methods(["../docs/advanced/coerce.py\n", "class Case:\n    def check(self):\n        pass\n"]) == {"check"}
