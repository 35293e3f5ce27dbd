"""Quality signals: each metric on fixtures with known values, the cache proven by counting
analyser calls, a security hole paid less than the clean solution, and the analysers
unsteerable by the agent's files."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from stamina_gym.quality.analyzers import bandit_findings, neutralise_suppressions, pylint_messages, radon_metrics
from stamina_gym.quality.measure import AnalysisCache, QualityMeter, Snapshot, cc_rank
from stamina_gym.quality.analyzers import FileQuality
from tests.conftest import act, mini_env

BRANCHY = textwrap.dedent(
    '''
    def classify(n):
        if n < 0:
            return "negative"
        elif n == 0:
            return "zero"
        for d in (2, 3):
            if n % d == 0:
                return "divisible"
        return "other"


    class Box:
        def size(self, items):
            return len(items) if items else 0
    '''
)
SHELL_HOLE = textwrap.dedent(
    """
    import subprocess


    def run(user_command):
        return subprocess.run(user_command, shell=True)  # nosec
    """
)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_radon_complexity_of_known_functions():
    sloc, functions, mi, function_mi = radon_metrics(BRANCHY, ast.parse(BRANCHY))
    assert ("classify", 2, 5) in functions  # 1 + if + elif + for + if
    assert ("Box.size", 14, 2) in functions  # 1 + the conditional expression
    assert len(functions) == 2 and sloc == 12
    assert 0 < mi <= 100
    (classify, classify_lines), (size, size_lines) = function_mi
    assert classify_lines > size_lines and 0 < classify < size <= 100  # the longer, tangled one scores lower
    assert [cc_rank(c) for c in (1, 5, 6, 10, 11, 25, 41)] == ["A", "A", "B", "B", "C", "D", "F"]


def test_bandit_finds_shell_injection_despite_nosec(tmp_path):
    path = write(tmp_path, {"hole.py": SHELL_HOLE}) / "hole.py"
    findings = bandit_findings(path)
    assert [(f[1], f[2], f[3]) for f in findings if f[1] == "B602"] == [("B602", "high", "high")]


def test_pylint_messages_survive_disable_comments(tmp_path):
    source = b"def f():\n    return missing_name  # pylint: disable=undefined-variable\n"
    path = tmp_path / "m.py"
    path.write_bytes(neutralise_suppressions(source))
    messages = pylint_messages(path)
    assert (2, "undefined-variable", "error") in messages


def test_pylint_score_follows_its_formula():
    files = {
        "a.py": FileQuality(statements=20, pylint=[(1, "x", "error"), (2, "y", "convention"), (3, "z", "warning")]),
        "b.py": FileQuality(statements=20, pylint=[(1, "w", "refactor"), (4, "i", "info")]),
    }
    # 10 - 10 * (5 * 1 + 1 + 1 + 1) / 40 = 8.0; info messages are not counted
    assert Snapshot(files).metrics()["pylint_score"] == 8.0
    assert Snapshot(files).components()["lint"] == 0.8


def test_security_component_halves_with_one_sure_high_finding():
    hole = {"h.py": FileQuality(bandit=[(5, "B602", "high", "high", "shell")])}
    assert Snapshot(hole).components()["security"] == 0.5
    assert Snapshot({"c.py": FileQuality()}).components()["security"] == 1.0


def test_cache_analyses_only_changed_files_and_is_shared(tmp_path):
    tree = write(tmp_path / "tree", {"pkg/__init__.py": "", "pkg/a.py": BRANCHY, "pkg/b.py": "X = 1\n"})
    cache = AnalysisCache(tmp_path / "cache")
    meter = QualityMeter(tmp_path / "scratch", cache)
    first = meter.measure(tree)
    assert meter.analysed == {"radon": 3, "bandit": 3, "pylint": 3}
    again = meter.measure(tree)
    assert meter.analysed == {"radon": 3, "bandit": 3, "pylint": 3}, "an unchanged tree is analysed again"
    assert again.metrics() == first.metrics()
    (tree / "pkg/b.py").write_text("X = 2\n")
    meter.measure(tree)
    assert meter.analysed == {"radon": 4, "bandit": 4, "pylint": 4}
    # another episode (a new meter) and another process (a new cache on the same folder)
    other = QualityMeter(tmp_path / "scratch2", AnalysisCache(tmp_path / "cache"))
    assert other.measure(tree).metrics() == meter.measure(tree).metrics()
    assert sum(other.analysed.values()) == 0


def test_edited_file_is_judged_by_its_new_text(tmp_path):
    tree = write(tmp_path / "tree", {"m.py": "def f():\n    return 1\n"})
    meter = QualityMeter(tmp_path / "scratch", AnalysisCache())
    assert meter.measure(tree).metrics()["pylint_messages"]["error"] == 0
    (tree / "m.py").write_text("def f():\n    return undefined_thing\n")
    assert meter.measure(tree).metrics()["pylint_messages"]["error"] == 1


def test_symlinks_and_huge_files_are_skipped_not_read(tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("def leaked():\n    return 1\n")
    tree = write(tmp_path / "tree", {"ok.py": "X = 1\n", "big.py": "X = 1\n" * 50_000})
    (tree / "link.py").symlink_to(secret)
    snapshot = QualityMeter(tmp_path / "scratch", AnalysisCache(), max_file_kb=64).measure(tree)
    assert list(snapshot.files) == ["ok.py"]
    assert sorted(s.split(":")[0] for s in snapshot.skipped) == ["big.py", "link.py"]


def test_agent_config_files_cannot_steer_or_run_code_in_the_analysers(tmp_path):
    marker = tmp_path / "pwned"
    plugin = f"open({str(marker)!r}, 'w').write('ran')\ndef register(linter):\n    pass\n"
    tree = write(
        tmp_path / "tree",
        {
            "evilplugin.py": plugin,
            "pylintrc": f"[MAIN]\nload-plugins=evilplugin\ninit-hook=open({str(marker)!r}, 'w')\ndisable=all\n",
            ".pylintrc": "[MAIN]\nload-plugins=evilplugin\ndisable=all\n",
            "pyproject.toml": "[tool.pylint.main]\nload-plugins = ['evilplugin']\ndisable = ['all']\n",
            "setup.cfg": "[pylint.main]\nload-plugins=evilplugin\n",
            ".bandit": "[bandit]\nskips = B602\n",
            "hole.py": SHELL_HOLE + "\n\ndef g():\n    return undefined_name  # pylint: disable=all\n",
        },
    )
    snapshot = QualityMeter(tmp_path / "scratch", AnalysisCache()).measure(tree)
    assert not marker.exists(), "a configuration file of the agent ran code"
    hole = snapshot.files["hole.py"]
    assert any(f[1] == "B602" for f in hole.bandit)
    assert any(m[1] == "undefined-variable" for m in hole.pylint)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the extension modules")
def test_compiled_module_in_the_workspace_is_never_loaded(tmp_path):
    """astroid before 4.4 imports C extensions whose names belong to the standard library
    from wherever they are found: a shared object the agent names ``_lzma...so`` runs its
    constructor inside pylint (astroid 4.4 trusts such a name only in the standard library's
    own folder; ``pylint>=3.2`` allows either). The meter analyses a copy that holds ``.py``
    files only, so neither depends on the installed astroid. The control is pylint on the raw
    tree told to load extensions, which loads the planted module on every astroid version."""
    marker = tmp_path / "pwned"
    c_file = tmp_path / "evil.c"
    c_file.write_text(
        f'#include <stdio.h>\n__attribute__((constructor)) static void boom(void) '
        f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
    )
    modules = ("_lzma", "_bz2", "_curses")
    app = "".join(f"import {m}\n" for m in modules) + "\nX = _lzma.FORMAT_XZ\nY = _bz2.BZ2Compressor\nZ = _curses.initscr\n"
    tree = write(tmp_path / "tree", {"app.py": app})
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in modules:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tree / f"{module}{suffix}"), str(c_file)], check=True)
    QualityMeter(tmp_path / "scratch", AnalysisCache()).measure(tree)
    assert not marker.exists(), "an extension module from the workspace was loaded"
    control = [sys.executable, "-m", "pylint", "--rcfile=/dev/null", "--unsafe-load-any-extension=y", "app.py"]
    subprocess.run(control, cwd=tree, capture_output=True)
    assert marker.exists(), "control: pylint on the raw tree should have loaded the planted module"


def clean_turn_one(env) -> float:
    act(env, tool="write_file", path="calc/__init__.py", content='"""Tiny calculator."""\n\n\ndef add(a, b):\n    """Sum."""\n    return a + b\n')
    _, reward, info = act(env, tool="submit")
    assert info["grade"]["failure_class"] is None
    return reward


def test_security_hole_earns_less_than_the_clean_solution():
    clean_env, holed_env = mini_env(), mini_env()
    try:
        clean_env.reset(seed=0)
        clean = clean_turn_one(clean_env)
        holed_env.reset(seed=0)
        act(holed_env, tool="write_file", path="calc/shell.py", content=SHELL_HOLE)
        act(
            holed_env,
            tool="write_file",
            path="calc/store.py",
            content='def find(conn, name):\n    return conn.execute("SELECT * FROM t WHERE name = \'%s\'" % name)\n',
        )
        holed = clean_turn_one(holed_env)
    finally:
        clean_env.close()
        holed_env.close()
    assert holed < clean - 0.05


def test_grade_carries_quality_rules_memory_and_scope(env):
    act(env, tool="write_file", path="calc/__init__.py", content='"""Calc."""\n\n\ndef add(a, b):\n    return a + b\n')
    _, _, info = act(env, tool="submit")
    grade = info["grade"]
    assert set(grade["quality"]["components"]) == {"lint", "complexity", "maintainability", "security"}
    assert grade["quality"]["churn"] == {"calc/__init__.py": [5, 1]}
    assert grade["rules"] == {"in_force": [], "broken": [], "violations": []}  # pure-calc binds from turn 2
    assert grade["memory"] == {"probes": [], "accuracy": None}
    assert grade["scope"] == {"mode": "free", "paths": ["calc/__init__.py"], "outside": []}
    assert set(info["reward_terms"]) >= {"quality", "rules", "scope"}


def test_rule_binds_from_its_turn_and_costs_reward(env):
    act(env, tool="write_file", path="calc/__init__.py", content="import os\n\n\ndef add(a, b):\n    return a + b\n")
    _, _, info = act(env, tool="submit")
    assert info["grade"]["rules"]["broken"] == [] and info["reward_terms"]["rules"] == 0
    act(env, tool="write_file", path="calc/__init__.py", content="import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    output, _, info = act(env, tool="submit")
    rules = info["grade"]["rules"]
    assert rules["broken"] == ["pure-calc"]
    assert rules["violations"][0] == {"rule": "pure-calc", "file": "calc/__init__.py", "line": 1, "message": "the calculator touches no operating system: imports os"}
    assert info["reward_terms"]["rules"] == pytest.approx(-0.1)
    assert "1 project convention(s) broken" in output and "pure-calc" not in output


@pytest.mark.parametrize("mode", ["free", "strict"])
def test_strict_mode_charges_edits_outside_the_turn(mode):
    env = mini_env(mode=mode)
    try:
        env.reset(seed=0)
        act(env, tool="write_file", path="calc/__init__.py", content='def add(a, b):\n    return a + b\n')
        act(env, tool="write_file", path="notes/todo.txt", content="later\n")
        act(env, tool="write_file", path="tests/test_add.py", content="from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
        _, _, info = act(env, tool="submit")
    finally:
        env.close()
    assert info["grade"]["scope"] == {"mode": mode, "paths": ["calc/__init__.py"], "outside": ["notes/todo.txt"]}
    assert info["reward_terms"]["scope"] == (-0.05 if mode == "strict" else 0.0)


def test_quality_can_be_switched_off():
    env = mini_env(quality={"enabled": False})
    try:
        env.reset(seed=0)
        _, _, info = act(env, tool="submit")
    finally:
        env.close()
    assert info["grade"]["quality"] is None and info["reward_terms"]["quality"] == 0.0


def test_pylint_every_k_turns_carries_the_lint_score_between_runs():
    env = mini_env(quality={"pylint_every": 5})
    try:
        env.reset(seed=0)
        grades = []
        for turn in env.turns:
            act(env, tool="write_file", path="calc/undefined.py", content=f"X = missing_{turn.index}\n")
            act(env, tool="apply_patch", patch=turn.reference_patch)
            grades.append(act(env, tool="submit")[2]["grade"]["quality"])
    finally:
        env.close()
    first, last = grades
    assert not first["pylint_measured"] and first["delta"]["lint"] == 0.0  # carried from the seed
    assert last["pylint_measured"] and last["metrics"]["pylint_messages"]["error"] >= 1  # the last turn always runs
    assert last["delta"]["lint"] < 0


def test_a_restored_episode_measures_quality_from_the_restored_state():
    straight = mini_env()
    try:
        straight.reset(seed=0)
        first = straight.turns[0]
        act(straight, tool="apply_patch", patch=first.reference_patch)
        act(straight, tool="submit")
        act(straight, tool="apply_patch", patch=straight.turns[1].reference_patch)
        expected = act(straight, tool="submit")[2]["grade"]["quality"]
    finally:
        straight.close()
    resumed = mini_env()
    try:
        resumed.reset(seed=0)
        resumed.restore(1, [first.reference_patch], frozenset())
        act(resumed, tool="apply_patch", patch=resumed.turns[1].reference_patch)
        got = act(resumed, tool="submit")[2]["grade"]["quality"]
    finally:
        resumed.close()
    assert got["score_delta"] == expected["score_delta"] and got["delta"] == expected["delta"]


def test_memory_cache_keeps_the_most_recently_used_entries():
    cache = AnalysisCache(max_entries=2)
    keys = [cache.key(f"X = {i}\n".encode()) for i in range(3)]
    cache.put(keys[0], FileQuality(sloc=0))
    cache.put(keys[1], FileQuality(sloc=1))
    assert cache.get(keys[0]).sloc == 0  # used: now the most recent
    cache.put(keys[2], FileQuality(sloc=2))
    assert cache.get(keys[1]) is None and cache.get(keys[0]).sloc == 0 and cache.get(keys[2]).sloc == 2


def test_rules_recheck_exactly_the_files_whose_text_changed():
    from pydantic import TypeAdapter

    from stamina_gym import rules as rules_module
    from stamina_gym.rules import Rule, check_rules

    rule = TypeAdapter(Rule).validate_python(
        {"id": "no-requests", "kind": "forbid_import", "description": "no requests", "modules": ["requests"]}
    )
    clean = {"app/a.py": "import json\n", "app/b.py": "import os\n"}
    calls = []
    check = rules_module._CHECKS["forbid_import"]

    def counted(r, files, tree):
        calls.append(list(files))
        yield from check(r, files, tree)

    rules_module._CHECKS["forbid_import"] = counted
    try:
        assert check_rules((rule,), clean, 1)[1] == []
        calls.clear()
        _, found = check_rules((rule,), {**clean, "app/b.py": "import os\nimport requests\n"}, 1)
    finally:
        rules_module._CHECKS["forbid_import"] = check
    assert calls == [["app/b.py"]]  # a.py's answer came from the memo
    assert [(v.file, v.line) for v in found] == [("app/b.py", 2)]
    assert check_rules((rule,), clean, 1)[1] == []  # back to the old text: clean again
