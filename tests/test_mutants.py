"""The mutation check: which lines are mutated, how, and that weak tests let mutants live."""

from __future__ import annotations

import shutil
import textwrap

from stamina_gym.mutants import added_lines, line_mutations, mutants_of
from stamina_gym.task import load_task_dir
from stamina_gym.validate import mutation_check
from tests.conftest import MINI

PATCH = textwrap.dedent(
    """\
    diff --git a/pkg/m.py b/pkg/m.py
    --- a/pkg/m.py
    +++ b/pkg/m.py
    @@ -1,2 +1,9 @@
     def f(x):
    -    return x
    +    \"\"\"Docstring that says x == 1
    +    and more text.\"\"\"
    +    if x > 2 and x != 7:
    +        return x + 1
    +    return x
    +
    +LIMIT = 200
    diff --git a/tests/test_m.py b/tests/test_m.py
    --- /dev/null
    +++ b/tests/test_m.py
    @@ -0,0 +1 @@
    +assert 1 == 1
    """
)
AFTER = 'def f(x):\n    """Docstring that says x == 1\n    and more text."""\n    if x > 2 and x != 7:\n        return x + 1\n    return x\n\nLIMIT = 200\n'


def test_added_lines_are_numbered_in_the_new_file():
    assert added_lines(PATCH) == {"pkg/m.py": [2, 3, 4, 5, 6, 7, 8], "tests/test_m.py": [1]}


def test_mutants_cover_operators_constants_conditions_and_removals_but_not_docstrings():
    found = mutants_of(PATCH, {"pkg/m.py": AFTER})
    by_line = {}
    for mutant in found:
        by_line.setdefault(mutant.line, set()).add(mutant.mutated.strip())
    assert 2 not in by_line and 3 not in by_line  # the docstring is text
    assert {"if x <= 2 and x != 7:", "if x > 2 or x != 7:", "if x > 2 and x == 7:", "if x > 3 and x != 7:",
            "if not (x > 2 and x != 7):"} <= by_line[4]  # fmt: skip
    assert {"return x - 1", "return x + 2", "return None"} <= by_line[5]
    assert by_line[8] == {"LIMIT = 201", "pass"}
    assert all(m.path == "pkg/m.py" for m in found)  # tests are never mutated


def test_strings_are_left_alone():
    assert list(line_mutations('    raise ValueError("a == b and c")')) == [('    pass', "removed")]


def test_good_tests_kill_and_weak_tests_let_mutants_live(tmp_path):
    strong = mutation_check(load_task_dir(MINI), per_turn=4)
    assert [k.tried for k in strong] == [2, 2] and all(k.killed == k.tried for k in strong)
    weak_root = tmp_path / "mini"
    shutil.copytree(MINI, weak_root)
    (weak_root / "turns/01-add/tests/test_add.py").write_text("from calc import add\n\n\ndef test_add():\n    assert callable(add)\n")
    weak = mutation_check(load_task_dir(weak_root), per_turn=4)
    assert weak[0].killed == 0 and len(weak[0].survivors) == weak[0].tried == 2
