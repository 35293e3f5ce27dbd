"""The interface check (``stamina_gym.interfaces``): a hidden test may use only product
names the agent was told about."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from stamina_gym import interfaces
from stamina_gym.interfaces import Told, Use
from stamina_gym.task import find_tasks, load_task, load_task_dir
from stamina_gym.validate import check_interfaces

TESTS = textwrap.dedent('''
    import pytest
    from shop.cart import Cart, make_cart
    from shop.errors import CartError
    from shop_http import call


    @pytest.fixture
    def cart():
        return make_cart(currency="EUR")


    def test_one(cart, monkeypatch):
        cart.add_item("apple", qty=2)
        for line in cart.lines():
            assert line.sku and line.items() is not None
        with pytest.raises(CartError) as info:
            cart.remove("pear")
        assert info.value.reason == "missing"
        Cart(owner="ann")
        monkeypatch.setenv("SHOP_CURRENCY", "EUR")
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/"}
        call(app, "GET", f"/carts/{cart.id}/checkout?coupon=x&limit=2")
        call(app, "GET", "/carts/7")
        cart.router.add("/made/up/route")
        main(["--currency", "EUR", "--nonsense-data"])
''')


def kinds(found: list[Use]) -> set[tuple[str, str]]:
    return {(use.kind, use.name) for use in found}


def test_uses_follow_product_values_and_read_routes_options_and_variables():
    found = kinds(interfaces.uses(TESTS, "t.py", {"shop"}))
    assert {("module", "shop.cart"), ("module", "shop.errors"), ("name", "Cart"), ("name", "make_cart"),
            ("name", "CartError")} <= found  # fmt: skip
    # a fixture that returns a product value taints the parameter named after it
    assert {("attribute", "add_item"), ("keyword", "qty"), ("attribute", "lines"), ("attribute", "sku"),
            ("attribute", "remove"), ("keyword", "currency"), ("field", "owner")} <= found  # fmt: skip
    # pytest's ExceptionInfo is not the product's, the exception in it is
    assert ("attribute", "reason") in found and ("attribute", "value") not in found
    assert {("route", "carts"), ("route", "checkout"), ("route", "coupon"), ("route", "limit")} <= found
    assert ("route", "7") not in found and ("route", "made") not in found  # an id; a path handed to the product
    assert {("flag", "--currency"), ("env", "SHOP_CURRENCY")} <= found
    assert ("env", "REQUEST_METHOD") not in found and ("env", "PATH_INFO") not in found
    assert not {use for use in found if use[1] in ("call", "monkeypatch", "setenv", "raises")}



def test_a_module_name_built_at_run_time_is_no_module_named():
    """``__import__("shop.moves." + name)`` names a prefix, not a module (six's tests import
    each of its moves so); a whole dotted name in a string is a module the test uses."""
    source = 'import importlib\n\n\ndef test_moves():\n    for name in ("a", "b"):\n        __import__("shop.moves." + name)\n' \
             '    importlib.import_module("shop.cart")\n'
    found = kinds(interfaces.uses(source, "t.py", {"shop"}))
    assert ("module", "shop.cart") in found
    assert not {use for use in found if use[0] == "module" and use[1].endswith(".")}

def test_prose_names_code_only_in_code_form():
    told = Told.prose("Please create a todo for each archive entry. Add `set_tags(todo_id, tags)` and a "
                      "`POST /todos/{id}/archive` route; `TodoService.create(title, due=None)` keeps working, "
                      "and the --db option and TODO_PORT stay.")  # fmt: skip
    assert {"set_tags", "TodoService", "create"} <= told.code
    assert "archive" not in told.code  # a word and a route segment, not a method
    assert {"todo_id", "tags", "title", "due"} <= told.keywords
    assert told.names(Use("route", "archive", "t.py", 1)) and told.names(Use("flag", "--db", "t.py", 1))
    assert told.names(Use("env", "TODO_PORT", "t.py", 1)) and not told.names(Use("flag", "--port", "t.py", 1))
    assert not Told.prose("Each todo has `tags`.").names(Use("keyword", "tags", "t.py", 1))


def write_task(root: Path, prompts: list[str], tests: str, answer: str | None = None) -> Path:
    (root / "repo" / "shop").mkdir(parents=True)
    (root / "repo" / "shop" / "__init__.py").write_text("")
    (root / "task.yaml").write_text(yaml.safe_dump({"id": root.name, "version": 1, "title": "t", "description": "d"}))
    turn = root / "turns" / "01-cart"
    (turn / "tests").mkdir(parents=True)
    spec = {"title": "Cart", "kind": "feature", "prompts": prompts}
    if answer:
        spec["spec"] = {"key_points": [{"id": "k", "keywords": ["k"], "phrasings": ["q?"], "answer": answer}]}
    (turn / "turn.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (turn / "tests" / "test_cart.py").write_text(tests)
    (turn / "reference.patch").write_text("")
    return root


REFERENCE = {"shop/__init__.py": "", "shop/cart.py": "class Cart:\n    def add_item(self, sku, qty=1):\n        self.sku = sku\n"
             "    def empty_out(self):\n        pass\n"}  # fmt: skip
CART_TEST = ("from shop.cart import Cart\n\ndef test_cart():\n    cart = Cart()\n    cart.add_item('a', qty=2)\n"
             "    cart.empty_out()\n    assert cart.sku\n")  # fmt: skip


def unnamed(tmp_path: Path, prompts: list[str], answer: str | None = None) -> set[tuple[str, str]]:
    task = load_task_dir(write_task(tmp_path / "shop", prompts, CART_TEST, answer))
    return kinds(interfaces.check_turn(task, task.turns[0], REFERENCE, {}))


def test_a_name_counts_when_every_paraphrase_names_it_or_a_spec_answer_does(tmp_path):
    both = "In `shop/cart.py`, a `Cart` with `add_item(sku, qty=1)` and `empty_out()`"
    assert unnamed(tmp_path / "a", [both + ", please.", both + ", thanks."]) == set()
    only_one = unnamed(tmp_path / "b", [both + ".", "In `shop/cart.py`, a `Cart` with `add_item(sku, qty=1)`."])
    assert only_one == {("attribute", "empty_out")}
    vague = unnamed(tmp_path / "c", ["A cart module where I can add items.", "Carts, please: adding items, emptying."])
    assert vague == {("module", "shop.cart"), ("name", "Cart"), ("attribute", "add_item"), ("keyword", "qty"),
                     ("attribute", "empty_out"), ("attribute", "sku")}  # fmt: skip
    answered = unnamed(tmp_path / "d", ["In `shop/cart.py`, a `Cart` with `add_item(sku, qty=1)`."] * 2,
                       answer="There is also `empty_out()` to clear it.")  # fmt: skip
    assert answered == set()


def test_planted_noise_names_nothing(tmp_path):
    """Turn 44 of StaminaTodo-v1 said `?search=` as deliberate noise, and a later test's
    ``search=`` keyword was credited to it: what a turn declares ``planted`` is read out."""
    prompts = ["In `shop/cart.py`, a `Cart` with `add_item(sku, qty=1)` (I think it was `empty_out()`?).",
               "In `shop/cart.py`, a `Cart` with `add_item(sku, qty=1)`; maybe `empty_out()` exists already."]  # fmt: skip
    root = write_task(tmp_path / "shop", prompts, CART_TEST)
    assert kinds(interfaces.check_turn(load_task_dir(root), load_task_dir(root).turns[0], REFERENCE, {})) == set()
    spec_path = root / "turns" / "01-cart" / "turn.yaml"
    spec = yaml.safe_load(spec_path.read_text()) | {"noise": ["names a method that is not there"], "planted": ["empty_out()"]}
    spec_path.write_text(yaml.safe_dump(spec))
    task = load_task_dir(root)
    assert kinds(interfaces.check_turn(task, task.turns[0], REFERENCE, {})) == {("attribute", "empty_out")}


def test_a_keyword_the_product_reads_from_its_kwargs_is_its_to_name(tmp_path):
    """tinydb 3.x: ``TinyDB(storage=..., default_table='t')``, which ``__init__`` takes as
    ``kwargs.pop('default_table', ...)``. The keyword is a parameter in all but its spelling,
    so a prompt must name it as one."""
    reference = {"shop/__init__.py": "", "shop/cart.py": (
        "def make_cart(*items, **options):\n    cart = {'who': options.pop('owner', None), 'max': 0}\n"
        "    if 'limit' in options:\n        cart['max'] = options['limit']\n    return cart\n")}  # fmt: skip
    test = "from shop.cart import make_cart\n\ndef test_cart():\n    assert make_cart(owner='ann', limit=3)\n"
    told = "In `shop/cart.py`, `make_cart(*items, **options)` makes a cart for its owner, with a limit."
    task = load_task_dir(write_task(tmp_path / "a", [told, told + " Thanks."], test))
    assert kinds(interfaces.check_turn(task, task.turns[0], reference, {})) == {("keyword", "owner"), ("keyword", "limit")}
    named = "In `shop/cart.py`, `make_cart(*items, owner=None, limit=None)`."
    task = load_task_dir(write_task(tmp_path / "b", [named, named + " Thanks."], test))
    assert kinds(interfaces.check_turn(task, task.turns[0], reference, {})) == set()


def test_the_contract_says_which_turn_told_each_name(tmp_path):
    first_test = "from shop.cart import Cart\n\ndef test_cart():\n    Cart().add_item('a', qty=2)\n"
    root = write_task(tmp_path / "shop", ["In `shop/cart.py`, a `Cart` with `add_item(code, qty=1)`."] * 2, first_test)
    second = root / "turns" / "02-empty"
    shutil.copytree(root / "turns" / "01-cart", second)
    spec = yaml.safe_load((second / "turn.yaml").read_text())
    spec["prompts"] = ["Carts need `empty_out()` now.", "Add `empty_out()` to the cart."]
    (second / "turn.yaml").write_text(yaml.safe_dump(spec))
    (second / "tests" / "test_cart.py").write_text(CART_TEST)
    task = load_task_dir(root)
    told = {(use.kind, use.name): where for use, where in interfaces.contract(task, task.turns[1], REFERENCE, {})}
    assert told == {("module", "shop.cart"): "turn 1", ("name", "Cart"): "turn 1", ("attribute", "add_item"): "turn 1",
                    ("keyword", "qty"): "turn 1", ("attribute", "empty_out"): "turn 2", ("attribute", "sku"): None}  # fmt: skip
    assert [str(use) for use in interfaces.check_turn(task, task.turns[1], REFERENCE, {})] == [
        "02-empty/tests/test_cart.py:7: attribute 'sku'"]  # fmt: skip


def test_the_todo_task_without_its_code_spans_shows_what_its_tests_rely_on(tmp_path):
    """The interfaces turns 30, 48 and 53 used before the prompts named them are found once
    the prompts stop naming code: the check sees what a test takes from the reference."""
    root = Path(shutil.copytree(Path(__file__).parents[1] / "tasks" / "todo", tmp_path / "todo"))
    for path in root.glob("turns/*/turn.yaml"):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec["prompts"] = [re.sub(r"`[^`]*`|\w+\([^)]*\)", "it", prompt) for prompt in spec["prompts"]]
        path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    task = load_task_dir(root)
    found = {}
    for problem in check_interfaces(task):
        match = re.search(r": (\w+) '([^']+)': named by no prompt", problem.message)
        if match:  # (calls that fit no told signature and untold output text are named too)
            found.setdefault(problem.turn, set()).add((match[1], match[2]))
    assert ("attribute", "set_tags") in found[30] and ("keyword", "tags") in found[30]
    assert ("keyword", "tags") in found[48]
    assert {("attribute", "archive"), ("keyword", "tags"), ("keyword", "due")} <= found[53]


@pytest.mark.parametrize("name", sorted(find_tasks()))
def test_every_shipped_turn_uses_only_named_interfaces(name):
    problems = check_interfaces(load_task(name))
    assert not problems, "\n".join(map(str, problems))
