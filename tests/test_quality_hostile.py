"""The meter and the rules against an agent paid to blind them: every attack is made for
real (real files, real pylint, radon and bandit), and each must leave the score no higher
than the honest file's, with the file named in the report when it cannot be measured."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from pylint.lint import Run
from pylint.reporters import CollectingReporter
from pylint.utils.pragma_parser import OPTION_PO, OPTION_RGX

from stamina_gym.config import QualityWeights
from stamina_gym.errors import StaminaError
from stamina_gym.quality.analyzers import _PRAGMA, AnalysisWorker, neutralise_suppressions
from stamina_gym.quality.measure import AnalysisCache, QualityMeter, Snapshot, score
from stamina_gym.quality.review import as_text
from stamina_gym.rules import Rule, check_rules
from tests.conftest import act, mini_env

WEIGHTS = QualityWeights().model_dump()
HONEST = "def f():\n    return missing_name\n"


def after(comment: str) -> str:
    """The honest module with ``comment`` after the line of the undefined name."""
    return HONEST.replace("missing_name\n", f"missing_name  {comment}\n")


#: Pragma forms pylint honours: on a plain pylint run, each hides the undefined name.
PRAGMAS = {
    "trailing": after("# pylint: disable=undefined-variable"),
    "no-spaces-all": after("#pylint:disable=all"),
    "after-other-words": after("# anything pylint: disable=all"),
    "after-noqa": after("# noqa: F821 pylint: disable=undefined-variable"),
    "second-comment": after("# type: ignore # pylint: disable=undefined-variable"),
    "tabs": after("#\tpylint:\tdisable=undefined-variable"),
    "after-hyphen": after("# x-pylint: disable=undefined-variable"),
    "after-dot": after("# a.pylint: disable=undefined-variable"),
    "after-colon": after("# foo: pylint: disable=undefined-variable"),
    "after-unicode": after("# \u00e9 pylint: disable=undefined-variable"),
    "spaced-equals": after("# pylint: disable = undefined-variable"),
    "message-id": after("# pylint: disable=E0602"),
    "disable-msg": after("# pylint: disable-msg=E0602"),
    "skip-file": "# pylint: skip-file\n" + HONEST,
    "disable-all": "# pylint: disable-all\n" + HONEST,
    "block": "# pylint: disable=undefined-variable\n" + HONEST,
    "module-all": "#pylint:disable=all\n" + HONEST,
    "disable-next": HONEST.replace("    return", "    # pylint:disable-next=undefined-variable\n    return"),
}


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        (root / rel).write_bytes(data)
    return root


def file_score(snapshot: Snapshot, rel: str) -> float:
    """The quality score of one file measured on its own."""
    return score(Snapshot({rel: snapshot.files[rel]}).components(), WEIGHTS)


def measure(tmp_path: Path, files: dict[str, str | bytes], **meter) -> Snapshot:
    tree = write(tmp_path / "tree", files)
    return QualityMeter(tmp_path / "scratch", AnalysisCache(), **meter).measure(tree)


def plain_pylint(paths: list[Path]) -> dict[str, set[str]]:
    """pylint's message symbols per file, run as anyone would run it: pragmas honoured."""
    reporter = CollectingReporter()
    Run(["--rcfile=/dev/null", "--persistent=n", "--score=n", *map(str, paths)], reporter=reporter, exit=False)
    found: dict[str, set[str]] = {p.name: set() for p in paths}
    for msg in reporter.messages:
        found[Path(msg.abspath).name].add(msg.symbol)
    return found


def rule(**fields):
    return TypeAdapter(Rule).validate_python({"description": "a decision", **fields})


# -- pylint's pragmas -----------------------------------------------------------------------


def test_the_neutraliser_removes_what_pylints_own_regex_needs():
    """Every pragma pylint honours passes its OPTION_PO, which needs ``\\bpylint:``: the
    neutraliser removes exactly that, so OPTION_PO matches nothing it leaves."""
    assert r"\bpylint:" in OPTION_RGX
    comments = [line for source in PRAGMAS.values() for line in source.splitlines() if "#" in line]
    comments += ["#pylint:disable=all", "# a:pylint:b pylint: enable=x", "# pylint:pylint: disable=all"]
    for comment in comments:
        assert OPTION_PO.search(comment), comment
        assert OPTION_PO.search(_PRAGMA.sub("pylint-", comment)) is None, comment
    pieces = ["#", " ", "\t", "pylint", "pylint:", ":", "=", "disable", "all", "x", "-", ".", ";", "\u00e9", "_"]
    draw = random.Random(0)
    for _ in range(5000):  # lines pylint's regex matches, built at random: none survives
        line = "".join(draw.choice(pieces) for _ in range(draw.randint(1, 12)))
        assert OPTION_PO.search(_PRAGMA.sub("pylint-", line)) is None, line


@pytest.fixture(scope="module")
def pragma_attack(tmp_path_factory):
    """The honest file and one file per pragma form, measured once; pylint as anyone runs
    it on the raw files is the control."""
    root = tmp_path_factory.mktemp("pragmas")
    files = {"honest.py": HONEST, **{f"{name.replace('-', '_')}.py": source for name, source in PRAGMAS.items()}}
    tree = write(root / "tree", files)
    control = plain_pylint(sorted(tree.glob("*.py")))
    snapshot = QualityMeter(root / "scratch", AnalysisCache()).measure(tree)
    return control, snapshot


@pytest.mark.parametrize("name", PRAGMAS)
def test_no_pragma_form_hides_a_message(pragma_attack, name):
    control, snapshot = pragma_attack
    rel = f"{name.replace('-', '_')}.py"
    assert "undefined-variable" in control["honest.py"]
    assert "undefined-variable" not in control[rel], "control: plain pylint should honour this pragma"
    measured = snapshot.files[rel]
    assert measured.error == ""
    assert "undefined-variable" in {symbol for _, symbol, _ in measured.pylint}
    assert file_score(snapshot, rel) <= file_score(snapshot, "honest.py")


@pytest.mark.parametrize(
    "source",
    [
        '"""Doc."""\nX = "' + "a" * 120 + ' # pylint: disable=line-too-long"\n',  # in a string: the line-length check reads it
        '"""Doc.\n\n' + "a" * 120 + ' # pylint: disable=line-too-long\n"""\n',  # in a docstring
    ],
    ids=["string", "docstring"],
)
def test_a_pragma_inside_a_string_hides_no_long_line(tmp_path, source):
    raw = write(tmp_path, {"raw.py": source}) / "raw.py"
    assert "line-too-long" not in plain_pylint([raw])["raw.py"], "control"
    snapshot = measure(tmp_path, {"m.py": source})
    assert (2 if source.startswith('"""Doc."""') else 3, "line-too-long", "convention") in snapshot.files["m.py"].pylint


def test_a_pragma_spelt_in_utf7_is_neutralised(tmp_path):
    """UTF-7 is a valid source encoding: ``+AHA-`` is a ``p``; a bytes-level neutraliser
    would not see the pragma."""
    source = b'# coding: utf-7\n"""Doc."""\nX = missing  # +AHA-ylint: disable=all\n'
    raw = write(tmp_path, {"raw.py": source}) / "raw.py"
    assert plain_pylint([raw])["raw.py"] == set(), "control: pylint honours the UTF-7 pragma"
    assert b"pylint" not in neutralise_suppressions(source).replace(b"pylint-", b"")
    fq = measure(tmp_path, {"m.py": source}).files["m.py"]
    assert fq.error == "" and "undefined-variable" in {symbol for _, symbol, _ in fq.pylint}


# -- decoding as Python does ----------------------------------------------------------------

#: Code with findings of every analyser: a shell hole, a complex function, an undefined name.
BAD = (
    "import subprocess\n\n\n"
    "def run(cmd, n):\n"
    "    if n > 1:\n        n += 1\n    elif n > 2:\n        n += 2\n    elif n > 3:\n        n += 3\n"
    "    elif n > 4:\n        n += 4\n    elif n > 5:\n        n += 5\n    elif n > 6:\n        n += 6\n"
    "    print('{}')\n"
    "    return subprocess.run(cmd, shell=True), undefined_name\n"
)


CAFE = BAD.replace("'{}'", "'caf\u00e9'")


@pytest.mark.parametrize(
    ("encoded", "honest"),
    [
        (("# -*- coding: latin-1 -*-\n" + CAFE).encode("latin-1"), "# -*- coding: utf-8 -*-\n" + CAFE),
        (b"\xef\xbb\xbf" + CAFE.encode(), CAFE),
    ],
    ids=["latin-1-cookie", "utf-8-bom"],
)
def test_source_is_decoded_as_python_decodes_it(tmp_path, encoded, honest):
    """The same code in UTF-8 is the honest file (radon's maintainability index pays for
    comments, so the cookie line is in both)."""
    compile(encoded, "m.py", "exec")  # the interpreter runs it
    snapshot = measure(tmp_path, {"encoded.py": encoded, "honest.py": honest})
    got, expected = snapshot.files["encoded.py"], snapshot.files["honest.py"]
    assert got.error == ""
    assert [(f[0], f[2]) for f in got.functions] == [(f[0], f[2]) for f in expected.functions]  # a cookie shifts lines
    assert [b[1:4] for b in got.bandit] == [b[1:4] for b in expected.bandit]
    assert {m[1] for m in got.pylint} >= {m[1] for m in expected.pylint} >= {"undefined-variable"}
    assert file_score(snapshot, "encoded.py") <= file_score(snapshot, "honest.py")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (BAD.replace("'{}'", "'caf\xe9'").encode("latin-1"), "decoding"),  # no cookie: not UTF-8
        (b"# -*- coding: no-such-codec -*-\n" + BAD.encode(), "decoding"),
        (BAD.encode() + b"\ndef broken(:\n", "parsing: SyntaxError"),
        (b"a = 1\nx = a" + b".b" * 900 + b"\n", "RecursionError"),  # the interpreter runs it
        (b"x = " + b"-" * 20_000 + b"a\n", "MemoryError"),
    ],
    ids=["undecodable", "unknown-codec", "syntax-error", "recursion", "memory"],
)
def test_a_file_no_analyser_can_read_counts_as_the_worst(tmp_path, data, why):
    snapshot = measure(tmp_path, {"app.py": BAD, "bad.py": data})
    assert why in snapshot.unreadable["bad.py"]
    assert snapshot.components() == dict.fromkeys(("lint", "complexity", "maintainability", "security"), 0.0)
    assert snapshot.worst()["unreadable"] == {"bad.py": snapshot.unreadable["bad.py"]}
    assert snapshot.metrics()["unreadable"] == 1
    alone = measure(tmp_path / "honest", {"app.py": BAD})
    assert score(snapshot.components(), WEIGHTS) < score(alone.components(), WEIGHTS)


def test_files_the_meter_cannot_read_count_as_the_worst(tmp_path):
    """Too large, reached through a link, or compiled: Python runs them all."""
    elsewhere = write(tmp_path / "elsewhere", {"impl.txt": BAD, "pkg/mod.py": BAD})
    tree = write(tmp_path / "tree", {"app.py": BAD, "big.py": "X = 1\n" * 20_000, "lib.pyc": b"\0" * 16})
    (tree / "impl.py").symlink_to(elsewhere / "impl.txt")
    (tree / "pkg").symlink_to(elsewhere / "pkg", target_is_directory=True)
    write(tree, {"tests/big_test_data.py": "X = 1\n" * 20_000, "venv/pyvenv.cfg": "", "venv/lib/x.py": BAD})
    snapshot = QualityMeter(tmp_path / "scratch", AnalysisCache(), max_file_kb=64, exclude=("tests/**",)).measure(tree)
    assert sorted(snapshot.unreadable) == ["big.py", "impl.py", "lib.pyc", "pkg/"]
    assert set(snapshot.files) == {"app.py"}  # tests and a virtual environment are left out
    assert score(snapshot.components(), WEIGHTS) == 0.0


# -- the rules see what the interpreter runs ------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        "# -*- coding: latin-1 -*-\nimport os\nNAME = 'caf\u00e9'\n".encode("latin-1"),
        b"\xef\xbb\xbfimport os\n",
        b"import\x0cos\n",  # a form feed is whitespace to Python, a line break to str.splitlines
    ],
    ids=["latin-1-cookie", "utf-8-bom", "form-feed"],
)
def test_rules_see_a_file_as_the_interpreter_reads_it(data):
    exec(compile(data, "m.py", "exec"), {})  # it really imports os
    rules = (
        rule(id="no-os", kind="forbid_import", modules=["os"]),
        rule(id="no-os-text", kind="forbid_regex", pattern=r"^import\s+os\b"),
    )
    _, found = check_rules(rules, {"app/m.py": as_text("app/m.py", data)}, turn=1)
    assert sorted({v.rule for v in found}) == ["no-os", "no-os-text"]


def test_a_long_chain_of_concatenations_neither_crashes_nor_hides_built_sql():
    source = "def f(conn, a):\n    conn.execute('SELECT * FROM t WHERE x = ' + a" + " + a" * 2000 + ")\n"
    compile(source, "m.py", "exec")  # valid Python, far deeper than the recursion limit
    rules = (rule(id="no-built-sql", kind="no_formatted_sql"),)
    _, found = check_rules(rules, {"store.py": source}, turn=1)
    assert [(v.rule, v.line) for v in found] == [("no-built-sql", 2)]


# -- time budget ----------------------------------------------------------------------------

#: A valid module that makes pylint's inference run for tens of seconds (each method's
#: return value is inferred through all the methods after it).
STALL = "class A:\n" + "".join(f"    def m{i}(self):\n        return self.m{i + 1}()\n" for i in range(200))


@pytest.mark.slow  # waits out the budget and starts a second worker process
def test_a_file_past_its_budget_is_killed_and_counts_as_the_worst(tmp_path):
    worker = AnalysisWorker()
    try:
        tree = write(tmp_path / "tree", {"stall.py": STALL, "z_app.py": '"""App."""\n\nX = missing\n'})  # in this order
        meter = QualityMeter(tmp_path / "scratch", AnalysisCache(), budget_s=1.0, worker=worker)
        start = time.monotonic()
        snapshot = meter.measure(tree)
        elapsed = time.monotonic() - start
        assert "budget of 1 s" in snapshot.unreadable["stall.py"]
        assert score(snapshot.components(), WEIGHTS) == 0.0
        assert snapshot.files["z_app.py"].error == "" and snapshot.files["z_app.py"].pylint  # by a new process
        assert worker.started == 2 and elapsed < 10, elapsed
        kept = meter.cache.get(meter.cache.key(STALL.encode()))  # radon's and bandit's, not the clock's
        assert kept is not None and not kept.error and not kept.pylint_measured
        (tree / "stall.py").unlink()
        assert meter.measure(tree).unreadable == {} and worker.started == 2  # the new process serves on
    finally:
        worker.close()


@pytest.mark.slow  # waits out the budgets and starts a second worker process
def test_a_review_of_many_slow_files_stops_at_its_own_budget(tmp_path):
    """Each file within its budget is not enough: a thousand files of two seconds each
    would hold a submit for half an hour. Past the review's budget the files left count
    as the worst without being analysed."""
    worker = AnalysisWorker()
    try:
        tree = write(tmp_path / "tree", {f"stall_{i}.py": STALL for i in range(6)})
        meter = QualityMeter(tmp_path / "scratch", AnalysisCache(), budget_s=2.0, review_budget_s=3.0, worker=worker)
        start = time.monotonic()
        snapshot = meter.measure(tree)
        elapsed = time.monotonic() - start
        reasons = snapshot.unreadable
        assert len(reasons) == 6 and score(snapshot.components(), WEIGHTS) == 0.0
        cut = [rel for rel, why in reasons.items() if "the review ran past its budget of 3 s" in why]
        assert len(cut) >= 4, reasons  # at most two files of two seconds fit in three
        assert elapsed < 6 * 2.0, elapsed
    finally:
        worker.close()


def test_one_worker_serves_every_submit_and_every_meter(tmp_path):
    """Two meters with the same module names share a worker: each file is judged against
    its own tree's modules, not the other's astroid parsed first."""
    worker = AnalysisWorker()
    try:
        main = '"""Main."""\nfrom app import db\n\nVALUE = db.get()\n'
        with_get = write(tmp_path / "a", {"app/__init__.py": "", "app/db.py": '"""Db."""\n\n\ndef get():\n    """Get."""\n    return 1\n', "app/main.py": main})
        without = write(tmp_path / "b", {"app/__init__.py": "", "app/db.py": '"""Db."""\n', "app/main.py": main})
        first = QualityMeter(tmp_path / "scratch-a", AnalysisCache(), worker=worker)
        second = QualityMeter(tmp_path / "scratch-b", AnalysisCache(), worker=worker)
        for _ in range(2):
            assert "no-member" not in {m[1] for m in first.measure(with_get).files["app/main.py"].pylint}
            assert "no-member" in {m[1] for m in second.measure(without).files["app/main.py"].pylint}
            first.cache, second.cache = AnalysisCache(), AnalysisCache()
        assert worker.started == 1
    finally:
        worker.close()


def test_a_process_in_which_an_analyser_failed_analyses_nothing_more(tmp_path):
    """pylint's checkers keep state between files: one left midway by a crash would judge
    the next file (here it saw every import out of place). The process is replaced."""
    worker = AnalysisWorker()
    try:
        honest = '"""Honest."""\nimport json\nimport sys\n\nVALUE = json.dumps(sys.argv)\n'
        files = write(tmp_path, {"crash.py": "a = 1\nx = a" + " + a" * 400 + "\n", "honest.py": honest})
        before = worker.analyse(files / "honest.py", files, basic=True, lint=True, budget=30)
        crash = worker.analyse(files / "crash.py", files, basic=False, lint=True, budget=30)
        after = worker.analyse(files / "honest.py", files, basic=True, lint=True, budget=30, fresh=True)
    finally:
        worker.close()
    assert "astroid-error" in crash.error and not crash.transient
    assert after == before and worker.started == 2


def test_a_worker_that_cannot_start_is_an_infrastructure_error(tmp_path, monkeypatch):
    """Our fault, not the agent's: it raises instead of scoring every file the worst."""
    worker = AnalysisWorker()
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(StaminaError, match="did not start"):
        worker.analyse(write(tmp_path, {"m.py": "X = 1\n"}) / "m.py", tmp_path, basic=True, lint=True, budget=5)
    worker.close()


# -- through the env ------------------------------------------------------------------------


def test_a_module_planted_for_one_submit_and_deleted_leaves_its_importer_judged_without_it():
    """The policy plants the module that makes an erring file clean, submits, then deletes
    the module: the next submit's meter sees the import error, as a fresh meter would."""
    env = mini_env()
    try:
        env.reset(seed=0)
        act(env, tool="write_file", path="calc/__init__.py", content='"""Calc."""\n\n\ndef add(a, b):\n    """Sum."""\n    return a + b\n')
        act(env, tool="write_file", path="calc/plant.py", content='"""Plant."""\n\n\ndef grow():\n    """Grow."""\n    return 1\n')
        act(env, tool="write_file", path="calc/user.py", content='"""User."""\nfrom calc import plant\n\nVALUE = plant.grow()\n')
        planted = act(env, tool="submit")[2]["grade"]["quality"]
        act(env, tool="apply_patch", patch=env.turns[1].reference_patch)
        act(env, tool="delete_file", path="calc/plant.py")
        info = act(env, tool="submit")[2]
    finally:
        env.close()
    assert planted["metrics"]["pylint_messages"]["error"] == 0
    quality = info["grade"]["quality"]
    assert quality["metrics"]["pylint_messages"]["error"] >= 1 and quality["delta"]["lint"] < 0
    assert info["reward_terms"]["quality"] < 0


def test_the_grade_names_a_file_the_meter_cannot_read():
    env = mini_env()
    try:
        env.reset(seed=0)
        act(env, tool="write_file", path="calc/__init__.py", content='"""Calc."""\n\n\ndef add(a, b):\n    """Sum."""\n    return a + b\n')
        honest = act(env, tool="submit")[2]["grade"]["quality"]
        act(env, tool="apply_patch", patch=env.turns[1].reference_patch)
        (env.workspace.path / "calc/legacy.py").write_bytes(b"NAME = 'caf\xe9'\n")  # neither UTF-8 nor declared
        (env.workspace.path / "calc/store.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport os\nNAME = 'caf\xe9'\n")
        output, _, info = act(env, tool="submit")
    finally:
        env.close()
    assert [(v["rule"], v["file"]) for v in info["grade"]["rules"]["violations"]] == [("pure-calc", "calc/store.py")]
    quality = info["grade"]["quality"]
    assert "calc/legacy.py" in quality["worst"]["unreadable"] and quality["metrics"]["unreadable"] == 1
    assert quality["score"] == 0.0 < honest["score"] and quality["score_delta"] < 0
    assert info["reward_terms"]["quality"] == quality["relative_delta"] < 0  # paid, though the tests pass
    assert "code quality 0.00" in output
