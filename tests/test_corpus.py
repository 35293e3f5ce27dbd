"""The corpus (``stamina_gym.mining.corpus``): a manifest of real projects' histories, each
package's kept steps and tests pinned, rebuilt by ``stamina-gym corpus build``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import stamina_gym  # noqa: F401 - registers StaminaCorpus-v0

from stamina_gym.errors import ConfigError
from stamina_gym.mining import sources
from stamina_gym.mining.corpus import BUILD_REPORT, MANIFEST, build, load_manifest, pin
from stamina_gym.mining.mine import mine
from stamina_gym.mining.recipe import shipped_recipes
from stamina_gym.mining.sources import Snapshot
from stamina_gym.task import load_task_dir
from tests.conftest import DATA, write_sdist

SHOUT = "def shout(text):\n    return text{}\n"
TEST = "from shout import shout\n\n\ndef test_{name}():\n    assert shout('a') == {value!r}\n"


def test_the_shipped_manifest_pins_twelve_packages_of_15_turns_or_more_in_both_splits():
    """Every package is pinned and long: a task of fewer than 15 turns is no long project,
    and an unpinned one would keep whatever steps looked steady on the building machine."""
    manifest = load_manifest()
    assert len(manifest.packages) >= 12 and manifest.split("train") and manifest.split("eval")
    for name, entry in manifest.packages.items():
        assert len(entry.turns) >= 15, name
        assert entry.recipe is None or entry.recipe in shipped_recipes(), name
        assert len(set(entry.versions)) == len(entry.versions), name
        if entry.git:  # steps are the commits between the two versions: pinned by their full hash
            assert len(entry.versions) == 2 and all(re.fullmatch(r"[0-9a-f]{40}", ref) for ref in entry.turns), name
        else:
            assert set(entry.turns) <= set(entry.versions) and set(entry.sdists) <= set(entry.versions), name


def _history() -> list[Snapshot]:
    bang = TEST.format(name="upper", value="A") + "\n\n" + TEST.format(name="bang", value="A!").split("\n\n\n")[1]
    return [
        Snapshot("1", "R1", files={"shout.py": SHOUT.format(""), "tests/test_shout.py": TEST.format(name="same", value="a")}),
        Snapshot("2", "R2", "Shout in upper case.",
                 files={"shout.py": SHOUT.format(".upper()"), "CHANGES": "2\n\nShout in upper case.\n",
                        "tests/test_shout.py": TEST.format(name="upper", value="A")}),
        Snapshot("3", "R3", "Shout with a bang.",
                 files={"shout.py": SHOUT.format(".upper() + '!'"), "CHANGES": "3\n\nShout with a bang.\n", "tests/test_shout.py": bang}),
    ]  # fmt: skip


def test_pinned_steps_and_tests_are_the_manifests_and_each_is_checked(tmp_path):
    """A step the manifest does not keep is dropped unrun; a pinned test that no longer
    fails before its step (or is gone) is named as a broken pin."""
    free = mine(_history(), tmp_path / "free", runs=1)
    assert [(s.ref, s.status) for s in free.steps] == [("2", "kept"), ("3", "kept")]
    pinned = mine(_history(), tmp_path / "pinned", pinned={"3": ["test_shout.py::test_bang"]})
    assert [(s.ref, s.status, s.cause) for s in pinned.steps] == [("2", "dropped", "not-pinned"), ("3", "kept", "")]
    assert pinned.kept[0].tests == ["01-r3/test_shout.py::test_bang"] and not pinned.kept[0].pin_broken
    # test_upper passes before R3 once R2 is folded in; test_gone does not exist
    broken = mine(_history(), tmp_path / "broken", pinned={"2": ["test_shout.py::test_upper"],
                                                           "3": ["test_shout.py::test_upper", "test_shout.py::test_gone"]})  # fmt: skip
    last = broken.steps[-1]
    assert last.status == "dropped" and last.pin_broken == ["test_shout.py::test_gone", "test_shout.py::test_upper"]


def _sdist(folder: Path, version: str, files: dict[str, str]) -> Path:
    """A release's sdist where the miner's cache keeps it, so no index is asked."""
    return write_sdist(folder / f"shout-{version}" / f"shout-{version}.tar.gz", f"shout-{version}", files)


def test_a_build_rebuilds_the_pinned_task_and_refuses_an_sdist_that_is_not_the_pinned_one(tmp_path):
    cache = tmp_path / "sdists"
    for snapshot in _history():
        _sdist(cache, snapshot.ref, snapshot.files)
    manifest_path = tmp_path / "corpus.yaml"
    manifest_path.write_text(yaml.safe_dump({"packages": {"shout": {"versions": ["1", "2", "3"], "split": "train", "licence": "MIT"}}}))
    mined = mine(sources.pypi_snapshots("shout", ["1", "2", "3"], cache), tmp_path / "mined" / "shout", runs=1)
    entry = pin(manifest_path, "shout", mined.task)
    assert list(entry.turns) == ["2", "3"] and set(entry.sdists) == {"1", "2", "3"}
    report = build(load_manifest(manifest_path), tmp_path / "corpus", cache=cache)
    row = report["shout"]
    assert (row["turns"], row["pins_broken"], row["pinned_steps_not_kept"], row["problems"]) == (2, {}, [], [])
    built = load_task_dir(tmp_path / "corpus" / "shout")
    assert [turn.spec.tests for turn in built.turns] == [("test_shout.py::test_upper",), ("test_shout.py::test_bang",)]
    assert built.meta.version == 1  # the entry's task_version, which a change of its pins moves
    moved = load_manifest(manifest_path)
    moved.packages["shout"] = moved.packages["shout"].model_copy(update={"task_version": 2})
    build(moved, tmp_path / "again", cache=cache, validate=False)
    assert load_task_dir(tmp_path / "again" / "shout").meta.version == 2
    assert yaml.safe_load((tmp_path / "corpus" / "corpus-build.yaml").read_text())["shout"]["turns"] == 2
    # another sdist under a pinned release: refused, named
    (cache / "shout-3" / "shout-3.tar.gz").unlink()
    _sdist(cache.parent / "other", "3", {"shout.py": "x = 1\n"}).rename(cache / "shout-3" / "shout-3.tar.gz")
    with pytest.raises(ConfigError, match=r"pypi:shout 3: the sdist shout-3.tar.gz has sha256 \w+, the manifest pins \w+"):
        build(load_manifest(manifest_path), tmp_path / "corpus", cache=cache)


def test_a_curated_note_goes_into_every_prompt_of_its_turn_and_only_a_pinned_step_has_one(tmp_path):
    """What a step's own words leave unsaid, a curator writes in the manifest: each of its
    turn's prompts ends with it, the other turns' do not, and the tests are the pinned ones."""
    cache = tmp_path / "sdists"
    for snapshot in _history():
        _sdist(cache, snapshot.ref, snapshot.files)
    note = "The bang is a single `!`, added after the upper-casing."
    entry = {"versions": ["1", "2", "3"], "split": "train", "licence": "MIT",
             "turns": {"2": ["test_shout.py::test_upper"], "3": ["test_shout.py::test_bang"]}, "notes": {"3": note}}  # fmt: skip
    manifest_path = tmp_path / "corpus.yaml"
    manifest_path.write_text(yaml.safe_dump({"packages": {"shout": entry}}))
    build(load_manifest(manifest_path), tmp_path / "corpus", cache=cache, validate=False)
    upper, bang = load_task_dir(tmp_path / "corpus" / "shout").turns
    assert len(bang.spec.prompts) == 2 and all(prompt.endswith("\n\n" + note) for prompt in bang.spec.prompts)
    assert not any(note in prompt for prompt in upper.spec.prompts)
    assert bang.spec.tests == ("test_shout.py::test_bang",)
    manifest_path.write_text(yaml.safe_dump({"packages": {"shout": {**entry, "notes": {"4": note}}}}))
    with pytest.raises(ConfigError, match="notes for steps that are not pinned turns: 4"):
        load_manifest(manifest_path)


def test_bad_manifests_and_names_are_named(tmp_path):
    bad = tmp_path / "corpus.yaml"
    bad.write_text("packages:\n  shout:\n    versions: ['1']\n    split: test\n    licence: MIT\n")
    with pytest.raises(ConfigError, match=r"corpus.yaml: .*versions.*|corpus.yaml: .*split"):
        load_manifest(bad)
    with pytest.raises(ConfigError, match="not in the corpus manifest: nosuch"):
        build(load_manifest(MANIFEST), tmp_path / "out", only=["nosuch"])
    run = subprocess.run([sys.executable, "-m", "stamina_gym.cli", "corpus", "list"], capture_output=True, text=True)
    assert run.returncode == 0 and "| six |" in run.stdout and "| tabulate |" in run.stdout, run.stderr


def built_corpus(root: Path, builds: dict[str, dict]) -> Path:
    """A folder laid out as ``corpus build`` leaves one: each package's task (the mini task,
    for speed) and the build report."""
    for name in builds:
        shutil.copytree(DATA / "mini", root / name)
    (root / BUILD_REPORT).write_text(yaml.safe_dump(builds), encoding="utf-8")
    return root


def test_the_corpus_env_draws_a_built_task_of_its_split_and_plays_it(tmp_path):
    corpus = built_corpus(tmp_path, {"alpha": {"split": "train", "problems": []}, "beta": {"split": "eval", "problems": []},
                                     "gamma": {"split": "train", "problems": ["a test passes at the seed"]}})  # fmt: skip
    env = gym.make("StaminaCorpus-v0", corpus=str(corpus), max_turns=1)
    try:
        assert env.unwrapped.tasks == {"alpha": corpus / "alpha"}  # gamma's build left problems
        observation, info = env.reset(seed=0)
        assert info["task"] == "alpha" and observation["turn"] == 1 and env.observation_space.contains(observation)
        _, reward, terminated, _, info = env.step({"tool": "write_file", "path": "calc/__init__.py",
                                                  "content": "def add(a, b):\n    return a + b\n"})  # fmt: skip
        assert info["task"] == "alpha"
        _, reward, terminated, _, info = env.step({"tool": "submit"})
        assert info["grade"]["passed"] == info["grade"]["total"] > 0 and reward > 0 and terminated
        with pytest.raises(ConfigError, match=r"'beta' is not a built task of split 'train'; the split holds alpha"):
            env.reset(options={"task": "beta"})
        from stamina_gym.agents import make_agent
        from stamina_gym.harness import run_episode

        played = run_episode(env, make_agent("oracle"), seed=1)  # the loop reads the drawn task's turns and reference
        assert played.solved_turns == 1 and played.total_reward > 0
    finally:
        env.close()


def test_the_corpus_env_draws_by_its_seed_and_can_be_told_which_task(tmp_path):
    from gymnasium.utils.env_checker import check_env

    corpus = built_corpus(tmp_path, {"alpha": {"split": "train", "problems": []}, "beta": {"split": "eval", "problems": []}})
    env = gym.make("StaminaCorpus-v0", corpus=str(corpus), split="all")
    try:
        check_env(env.unwrapped, skip_render_check=True)
        drawn = [env.reset(seed=seed)[1]["task"] for seed in range(8)]
        assert set(drawn) == {"alpha", "beta"}
        assert [env.reset(seed=seed)[1]["task"] for seed in range(8)] == drawn
        assert env.reset(seed=0, options={"task": "beta"})[1]["task"] == "beta"
    finally:
        env.close()


def test_a_corpus_env_with_nothing_built_says_what_to_run(tmp_path):
    with pytest.raises(ConfigError, match="corpus-build.yaml is missing.*stamina-gym corpus build --out"):
        gym.make("StaminaCorpus-v0", corpus=str(tmp_path))
    built_corpus(tmp_path / "c", {"alpha": {"split": "train", "problems": []}})
    with pytest.raises(ConfigError, match=r"no package of split 'eval'.*alpha \(train, 0 problems\)"):
        gym.make("StaminaCorpus-v0", corpus=str(tmp_path / "c"), split="eval")
    with pytest.raises(ConfigError, match="split must be one of train, eval, all"):
        gym.make("StaminaCorpus-v0", corpus=str(tmp_path / "c"), split="test")


def _git_history(root: Path) -> list[str]:
    """The shout history as commits of a real repository; their hashes, seed first."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(root), "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.org", "GIT_COMMITTER_NAME": "dev",
           "GIT_COMMITTER_EMAIL": "dev@example.org"}  # fmt: skip
    root.mkdir(parents=True)

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    commits = []
    for snapshot in _history():
        for rel, text in snapshot.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        git("add", "-A")
        git("commit", "-q", "-m", f"{snapshot.title}\n\n{snapshot.message}".strip())
        commits.append(git("rev-parse", "HEAD"))
    return commits


def test_a_git_history_entry_is_cloned_mined_with_its_pins_and_a_clone_that_fails_is_its_rows_problem(tmp_path):
    """A project whose releases give too few steps names its git history: a build clones
    it (here from a path, with real git) and checks the pinned commits as it does
    releases; a repository that cannot be cloned fails its own row, not the build."""
    commits = _git_history(tmp_path / "upstream")
    manifest_path = tmp_path / "corpus.yaml"
    manifest_path.write_text(yaml.safe_dump({"packages": {
        "shout": {"git": str(tmp_path / "upstream"), "versions": [commits[0], commits[-1]], "split": "train", "licence": "MIT"},
        "gone": {"git": str(tmp_path / "nowhere"), "versions": [commits[0], commits[-1]], "split": "eval", "licence": "MIT"}}}))  # fmt: skip
    mined = mine(sources.git_snapshots(tmp_path / "upstream", seed=commits[0]), tmp_path / "mined" / "shout", runs=1)
    entry = pin(manifest_path, "shout", mined.task)
    assert list(entry.turns) == commits[1:] and entry.versions == (commits[0], commits[-1]) and not entry.sdists
    report = build(load_manifest(manifest_path), tmp_path / "corpus", cache=tmp_path / "cache" / "sdists")
    assert (report["shout"]["turns"], report["shout"]["pins_broken"], report["shout"]["problems"]) == (2, {}, [])
    assert (tmp_path / "cache" / "git" / "shout" / ".git").is_dir()
    assert report["gone"]["turns"] == 0 and "cloning" in report["gone"]["problems"][0] and "nowhere" in report["gone"]["problems"][0]
    assert list(build(load_manifest(manifest_path), tmp_path / "again", cache=tmp_path / "cache" / "sdists", git=False)) == []
    manifest_path.write_text(yaml.safe_dump({"packages": {"shout": {"git": "x", "versions": ["a", "b", "c"], "split": "train", "licence": "MIT"}}}))
    with pytest.raises(ConfigError, match="corpus.yaml: .*names two versions, the seed commit and the last"):
        load_manifest(manifest_path)
