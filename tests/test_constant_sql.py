"""bandit's B608 findings on SQL built from constant text only are left out of the security
score, and only those: every way to splice in a caller's value keeps its finding, and a
file that rebinds a name a proof relies on voids the proof."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stamina_gym.quality.constant_sql import attribute_writes, constant_lines
from stamina_gym.quality.measure import AnalysisCache, QualityMeter
from stamina_gym.rules import interpolated

STORE = '''"""Storage."""

_COLUMNS = "id, title, done"
_TABLES = ("todo_tags", "todo_items")
SORT_KEYS = {"title": "title COLLATE NOCASE", "id": "id"}


def _placeholders(values):
    return ", ".join("?" for _ in values)


def get_many(conn, ids):
    return conn.execute(f"SELECT {_COLUMNS} FROM todos WHERE id IN ({_placeholders(ids)})", tuple(ids))


def wipe(conn, todo_id):
    for table in _TABLES:
        conn.execute(f"DELETE FROM {table} WHERE todo_id = ?", (todo_id,))


def ordered(conn, key, everyone):
    conditions = [] if everyone else ["owner_id IS ?"]
    conditions.append("done = 0")
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    rows = ", ".join(["(?, ?)"] * 3)
    conn.execute(f"INSERT INTO pairs VALUES {rows}")
    return conn.execute(f"SELECT {_COLUMNS} FROM todos{where} ORDER BY {SORT_KEYS[key]}")


class Filter:
    def __init__(self, done=None, owner=None):
        self.done, self.owner = done, owner

    def where(self):
        conditions: list[str] = ["owner_id IS ?"]
        params = [self.owner]
        if self.done is not None:
            conditions.append("done = ?")
            params.append(self.done)
        return " WHERE " + " AND ".join(conditions), params


def matching(conn, filters: Filter):
    where, params = filters.where()
    return conn.execute(f"SELECT COUNT(*) FROM todos{where}", params)


def by_owner(conn, owner):
    where, params = Filter(owner=owner).where()
    return conn.execute(f"SELECT id FROM todos{where}", params)


def by_local(conn, owner):
    found = Filter(owner=owner)
    where, params = found.where()
    return conn.execute(f"SELECT id FROM todos{where}", params)


def purge(conn, before):
    where, params = ("WHERE deleted_at < ?", (before,)) if before else ("", ())
    return conn.execute(f"DELETE FROM trash {where}", params)
'''

# Each one splices a caller's value into the SQL, one way or another.
INJECTIONS = {
    "a parameter": 'def f(conn, name):\n    return conn.execute(f"SELECT * FROM todos WHERE title = \'{name}\'")\n',
    "a local from a parameter": (
        'def f(conn, name):\n    where = " WHERE done = 0"\n    if name:\n        where = " WHERE title = " + name\n'
        '    return conn.execute("SELECT * FROM todos" + where)\n'
    ),
    "a list that gets a parameter appended": (
        'def f(conn, name):\n    parts = ["done = 0"]\n    parts.append(name)\n'
        '    return conn.execute("SELECT * FROM todos WHERE " + " AND ".join(parts))\n'
    ),
    "a helper returning its argument": (
        'def _quote(value):\n    return value\n\n\ndef f(conn, name):\n'
        '    return conn.execute(f"SELECT * FROM todos WHERE title = {_quote(name)}")\n'
    ),
    "a comprehension over a parameter": (
        'def f(conn, names):\n    return conn.execute("SELECT * FROM t WHERE " + " OR ".join(f"title = {n}" for n in names))\n'
    ),
    "a constant rebound through global": (
        '_COLUMNS = "id"\n\n\ndef set_columns(value):\n    global _COLUMNS\n    _COLUMNS = value\n\n\n'
        'def f(conn):\n    return conn.execute(f"SELECT {_COLUMNS} FROM todos")\n'
    ),
    "a constant rebound in an if at module level": (
        'import os\n\n_COLUMNS = "id"\nif os.environ.get("X"):\n    _COLUMNS = os.environ["X"]\n\n\n'
        'def f(conn):\n    return conn.execute(f"SELECT {_COLUMNS} FROM todos")\n'
    ),
    "a local that grows by a parameter": (
        'def f(conn, name):\n    sql = "SELECT * FROM t WHERE "\n    for _ in range(2):\n        sql = sql + name\n'
        '    return conn.execute(sql)\n'
    ),
    "an attribute": 'def f(conn, request):\n    return conn.execute(f"SELECT * FROM todos ORDER BY {request.sort}")\n',
    "a tuple item from a parameter": (
        'def f(conn, name, everyone):\n    where, params = ("", ()) if everyone else (name, ())\n'
        '    return conn.execute(f"SELECT * FROM t {where}", params)\n'
    ),
    "a method returning an attribute": (
        'class F:\n    def __init__(self, raw):\n        self.raw = raw\n\n    def where(self):\n'
        '        return self.raw, []\n\n\ndef f(conn, flt: F):\n    where, params = flt.where()\n'
        '    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "a method on an object of unknown class": (
        'class F:\n    def where(self):\n        return " WHERE done = 0", []\n\n\ndef f(conn, flt):\n'
        '    where, params = flt.where()\n    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "a method a subclass overrides": (
        'class F:\n    def where(self):\n        return " WHERE done = 0", []\n\n\nclass G(F):\n'
        '    def __init__(self, raw):\n        self.raw = raw\n\n    def where(self):\n        return self.raw, []\n\n\n'
        'def f(conn, flt: F):\n    where, params = flt.where()\n    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "a method a class attribute rebinds": (
        'def _raw(self):\n    return self.raw, []\n\n\nclass F:\n    def where(self):\n        return "", []\n\n'
        '    where = _raw\n\n\ndef f(conn):\n    where, params = F().where()\n'
        '    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "a class that makes something else": (
        'class F:\n    def __new__(cls, raw):\n        return raw\n\n    def where(self):\n        return "", []\n\n\n'
        'def f(conn, raw):\n    where, params = F(raw).where()\n    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "a class name rebound": (
        'class F:\n    def where(self):\n        return "", []\n\n\ndef f(conn, other):\n    F = other\n'
        '    where, params = F().where()\n    return conn.execute(f"SELECT * FROM t{where}", params)\n'
    ),
    "the other item of a tuple": (
        'def _pair(name):\n    return " WHERE done = 0", name\n\n\ndef f(conn, name):\n    _, raw = _pair(name)\n'
        '    return conn.execute(f"SELECT * FROM t WHERE {raw}")\n'
    ),
    "an annotated parameter whose method name a built-in type has": (
        'class F:\n    def strip(self):\n        return " WHERE done = 0"\n\n\ndef f(conn, flt: F):\n'
        '    return conn.execute(f"SELECT * FROM t{flt.strip()}")\n'  # a str passed for flt strips itself
    ),
    "a helper shadowed by a parameter": (
        'def _placeholders(values):\n    return ", ".join("?" for _ in values)\n\n\n'
        'def f(conn, _placeholders):\n    return conn.execute(f"SELECT * FROM t WHERE id IN ({_placeholders})")\n'
    ),
}


def measure(tmp_path: Path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / "tree" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / rel).write_text(text)
    return QualityMeter(tmp_path / "scratch", AnalysisCache()).measure(tmp_path / "tree")


def test_constant_sql_is_left_out_and_counted_apart(tmp_path):
    snapshot = measure(tmp_path, {"app/store.py": STORE})
    flagged = [finding for finding in snapshot.files["app/store.py"].bandit if finding[1] == "B608"]
    assert len(flagged) >= 4  # bandit flags every one of them
    assert snapshot.findings() == []
    assert snapshot.components()["security"] == 1.0
    assert snapshot.metrics()["bandit_constant_sql"] == len(snapshot.files["app/store.py"].bandit)


@pytest.mark.parametrize("how", sorted(INJECTIONS))
def test_sql_that_can_hold_a_callers_value_keeps_its_finding(how):
    tree = ast.parse(INJECTIONS[how])
    built = [node.lineno for node in ast.walk(tree) if interpolated(node) is not None]  # where bandit's B608 points
    assert built and not set(built) & set(constant_lines(tree)), how


@pytest.mark.parametrize("writer", [
    "from app import store\n\n\ndef hijack(value):\n    store._COLUMNS = value\n",
    "from app import store\n\n\ndef hijack(value):\n    setattr(store, '_COLUMNS', value)\n",
    "from app import store\n\n\ndef hijack(name, value):\n    setattr(store, name, value)\n",
    "import sys\n\n\ndef hijack(value):\n    sys.modules['app.store'].__dict__['_COLUMNS'] = value\n",
    "def hijack(value):\n    globals()['x'] = value\n",
])  # fmt: skip
def test_a_file_that_can_rebind_a_name_a_proof_uses_voids_the_proof(tmp_path, writer):
    snapshot = measure(tmp_path, {"app/store.py": STORE, "app/hijack.py": writer})
    voided = {finding[0] for _, finding in snapshot.findings()}
    assert voided, writer
    assert snapshot.components()["security"] < 1.0


def test_a_file_that_rebinds_a_method_a_proof_calls_voids_the_proof(tmp_path):
    writer = "from app import store\n\n\ndef hijack(raw):\n    store.Filter.where = lambda self: (raw, [])\n"
    snapshot = measure(tmp_path, {"app/store.py": STORE, "app/hijack.py": writer})
    voided = {line for _, (line, *_) in snapshot.findings()}
    calls = [n.lineno for n in ast.walk(ast.parse(STORE)) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "where"]
    assert voided >= {line + 1 for line in calls}  # each query built on the line after its where()


def test_writes_to_other_attributes_and_plain_objects_void_nothing():
    assert attribute_writes(ast.parse("def f(todo, name, v):\n    todo.title = v\n    setattr(todo, name, v)\n")) == {"title"}


def test_a_chain_of_doubling_names_is_judged_in_linear_time():
    """Each name uses the one before twice: judged without a memory of answers, 2**60 steps."""
    chain = "".join(f"    s{n} = s{n - 1} + s{n - 1}\n" for n in range(1, 61))
    source = f'def f(conn):\n    s0 = "x"\n{chain}    return conn.execute(f"SELECT {{s60}}")\n'
    lines = constant_lines(ast.parse(source))
    assert 63 in lines  # proved constant, and quickly (the test's own timeout would catch a blow-up)
    tainted = source.replace('s0 = "x"', "s0 = conn.name")
    assert 63 not in constant_lines(ast.parse(tainted))


def test_an_object_of_another_class_for_an_annotated_parameter_voids_the_proof(tmp_path):
    """The attack on a believed annotation: another file defines a class with the same
    method, returning a caller's text, and passes it for ``filters: Filter``. The proof
    that leaned on the annotation is void; the constructor-made filters keep theirs."""
    evil = (
        "from app import store\n\n\nclass Raw:\n    def __init__(self, text):\n        self.text = text\n\n"
        "    def where(self):\n        return self.text, []\n\n\n"
        "def dump(conn, text):\n    return store.matching(conn, Raw(text))\n"
    )
    alone = measure(tmp_path / "alone", {"app/store.py": STORE})
    attacked = measure(tmp_path / "attacked", {"app/store.py": STORE, "app/evil.py": evil})
    lines = STORE.splitlines()
    annotated = next(i for i, line in enumerate(lines, 1) if "filters.where()" in line) + 1
    built = next(i for i, line in enumerate(lines, 1) if "Filter(owner=owner).where()" in line) + 1
    assert alone.findings() == []
    voided = {line for _, (line, *_) in attacked.findings()}
    assert annotated in voided and built not in voided
