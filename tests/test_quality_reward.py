"""The quality term pays quality relative to the reference at the same turn: the oracle
earns 0, a loss is paid at once, a gain only on a solved turn, and nothing can be farmed
by adding code on one turn and removing it on the next, or by skipping turns."""

from __future__ import annotations

from pathlib import Path

from stamina_gym.cli import main
from stamina_gym.config import QualityConfig
from stamina_gym.quality.measure import AnalysisCache, QualityMeter
from stamina_gym.quality.reference import measure_reference, reference_store
from stamina_gym.task import load_task
from tests.conftest import MINI, act, mini_env

# Deeply nested branches, a bare except and an eval: worse code by every measure.
JUNK = '''"""Helpers."""


def tangle(a, b, c, d):
    try:
        if a:
            if b:
                if c:
                    if d:
                        return eval(str(a))
                    elif a > b:
                        return 1
                    elif a > c:
                        return 2
                    elif b > c:
                        return 3
                    return 4
                return 5
            return 6
    except:
        pass
    return 7
'''


def play(actions_per_turn) -> list[dict]:
    """Play the mini task (two turns); ``actions_per_turn[i](env)`` edits the tree before
    turn i's submit. Returns each submit's info."""
    env = mini_env()
    env.reset(seed=0)
    infos = []
    try:
        for index, actions in enumerate(actions_per_turn):
            actions(env, index)
            infos.append(act(env, tool="submit")[2])
    finally:
        env.close()
    return infos


def reference(env, index):
    act(env, tool="apply_patch", patch=env.turns[index].reference_patch)


def nothing(env, index):
    pass


def reference_and_junk(env, index):
    reference(env, index)
    act(env, tool="write_file", path="calc/helpers.py", content=JUNK)
    act(env, tool="write_file", path="calc/__init__.py", content='"""Tiny calculator."""\n')  # and the tests fail


def catch_up_and_clean(env, index):
    """The reference's tree after this turn, whatever the tree holds now."""
    act(env, tool="write_file", path="calc/__init__.py", content='"""Tiny calculator."""\n')
    (env.workspace.path / "calc" / "helpers.py").unlink(missing_ok=True)
    for turn in env.turns[: index + 1]:
        act(env, tool="apply_patch", patch=turn.reference_patch)


def quality_terms(infos: list[dict]) -> list[float]:
    return [info["reward_terms"]["quality"] for info in infos]


def test_the_oracle_earns_no_quality_term_while_its_absolute_quality_moves():
    infos = play([reference, reference])
    assert quality_terms(infos) == [0.0, 0.0]
    assert [info["grade"]["quality"]["relative"] for info in infos] == [0.0, 0.0]
    assert any(info["grade"]["quality"]["score_delta"] != 0 for info in infos)  # the absolute score did move


def test_junk_added_on_a_failed_turn_and_removed_on_a_solved_one_earns_nothing():
    infos = play([reference_and_junk, catch_up_and_clean])
    assert infos[0]["grade"]["passed"] == 0 and infos[1]["grade"]["passed"] == infos[1]["grade"]["total"]
    loss, gain = quality_terms(infos)
    assert loss < 0 < gain  # the junk cost at once; removing it on a solved turn is paid back
    assert loss + gain <= 0
    assert infos[1]["grade"]["quality"]["relative"] == 0.0


def test_a_gain_on_a_failed_turn_is_not_paid_and_not_carried_over():
    infos = play([nothing, catch_up_and_clean])
    first = infos[0]["grade"]["quality"]
    assert first["relative_delta"] > 0  # the reference's code grew, the seed's did not
    assert quality_terms(infos)[0] == 0.0  # ... but the turn failed: nothing paid
    assert sum(quality_terms(infos)) <= 0  # catching up later banks none of it


def test_doing_nothing_never_earns_quality():
    infos = play([nothing, nothing])
    assert all(term <= 0 for term in quality_terms(infos))


def padded(env, index):
    """The reference, plus two hundred trivial documented functions nobody calls: padding
    that lifts the per-function means (maintainability, complexity) without any work."""
    reference(env, index)
    pad = "".join(f'\n\ndef helper_{n}(value):\n    """Return the value."""\n    return value\n' for n in range(200))
    act(env, tool="write_file", path="calc/helpers.py", content='"""Helpers."""\n' + pad)


def test_padding_with_trivial_functions_earns_no_more_than_the_headroom_once(tmp_path):
    """An open weakness, measured: per-function means (maintainability, complexity) are
    lifted by dead trivial code. What it can earn is bounded by the score's headroom over
    the reference at that turn, paid once and only on a solved turn; on the mini task that
    is about 0.13 against 1.5 for solving the turn. Closing it (counting only code the tests
    reach, or not paying gains that come from new unreached functions) is open work."""
    gamed = play([padded, reference])
    gain = sum(quality_terms(gamed)) - sum(quality_terms(play([reference, reference])))
    headroom = 1 - gamed[0]["grade"]["quality"]["reference_score"]
    assert 0 < gain <= headroom + 0.02, (quality_terms(gamed), headroom)
    assert gamed[0]["reward_terms"]["bonus"] == 0.5  # padding pays only where the turn was solved
    assert sum(quality_terms(play([nothing, nothing]))) <= 0  # doing nothing still earns nothing


def test_the_reference_quality_is_measured_once_and_read_back(tmp_path, monkeypatch, capsys):
    """``validate --quality`` keeps the reference's analysis in the folder; a new meter
    with a cold memory (a new process's) then runs no analyser and finds the same quality;
    an env reads and fills the folder its config names."""
    folder = tmp_path / "reference"
    monkeypatch.setenv("STAMINA_GYM_QUALITY_CACHE", str(folder))
    assert main(["validate", str(MINI), "--quality"]) == 0
    said = capsys.readouterr().out
    assert f"kept in {folder}" in said and "0 read back" in said and list(folder.glob("*.json"))

    task = load_task(str(MINI))
    store = reference_store(QualityConfig())
    assert store is not None and store.directory == folder
    warm = QualityMeter(tmp_path / "warm", AnalysisCache(), persist=store)
    cold = QualityMeter(tmp_path / "cold", AnalysisCache())
    read_back = measure_reference(task, {}, warm, tmp_path / "track-warm")
    measured = measure_reference(task, {}, cold, tmp_path / "track-cold")
    assert sum(warm.analysed.values()) == 0 and store.hits > 0 and sum(cold.analysed.values()) > 0
    assert [s.components() for s in read_back] == [s.components() for s in measured]

    named = tmp_path / "named"
    env = mini_env(quality={"reference_cache_dir": str(named)})
    env.reset(seed=0)
    act(env, tool="submit")
    env.close()
    assert {p.name for p in named.glob("*.json")} <= {p.name for p in folder.glob("*.json")}
    assert list(named.glob("*.json"))
    assert reference_store(QualityConfig(reference_cache_dir="")) is None


def test_a_generated_header_on_the_agents_own_code_hides_nothing_from_the_meter():
    """The miner leaves a task's generated data modules out of the meter
    (``TaskMeta.quality_exclude``, fixed from the reference's history); a policy that heads
    its own tangled module with "generated, do not edit" pays for it as for any junk."""
    def solved_with_marked_junk(env, index):
        reference(env, index)
        act(env, tool="write_file", path="calc/helpers.py",
            content="# This file is automatically generated. Do not edit.\n" + JUNK)  # fmt: skip

    marked = quality_terms(play([solved_with_marked_junk]))[0]
    assert marked < 0
