"""Rollout collection: seeds, backends giving identical data, failures as data, datasets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stamina_gym.cli import main
from stamina_gym.errors import ConfigError
from stamina_gym.rollout import OPERATIONAL_FIELDS, RolloutSpec, collect, episode_seeds, play_episode
from stamina_gym.rollout.datasets import write_parquet
from stamina_gym.workspace import GitError
from tests.conftest import DATA, mini_env

MINI_ID = "Stamina-mini-v1"
SPEC = RolloutSpec(MINI_ID, tasks=(str(DATA),))


def data_only(records: list[dict]) -> list[dict]:
    """A record without the fields that say how (not what) it ran."""
    out = []
    for record in records:
        kept = {k: v for k, v in record.items() if k not in OPERATIONAL_FIELDS}
        kept["steps"] = [{k: v for k, v in step.items() if k not in OPERATIONAL_FIELDS} for step in record["steps"]]
        out.append(kept)
    return out


def test_episode_seeds_are_fixed_by_the_base_and_distinct():
    seeds = episode_seeds(0, 8)
    assert seeds == episode_seeds(0, 8) and len(set(seeds)) == 8
    assert episode_seeds(0, 3) == seeds[:3]  # more episodes extend the list, never reshuffle it
    assert set(episode_seeds(1, 8)).isdisjoint(seeds)
    with pytest.raises(ValueError, match="base seed"):
        episode_seeds(-1, 2)


@pytest.fixture(scope="module")
def inline_records():
    return collect(SPEC, episodes=3, workers=1, backend="inline").records


def test_inline_collection_records_every_step_and_turn(inline_records):
    assert [r["episode"] for r in inline_records] == [0, 1, 2]
    assert [r["seed"] for r in inline_records] == episode_seeds(0, 3)
    for record in inline_records:
        assert record["failure_class"] is None and record["terminated"] and not record["truncated"]
        assert record["num_steps"] == 4 and len(record["steps"]) == 5 and record["steps"][0]["action"] is None
        assert record["turn_failure_classes"] == [None, None]
        submits = [step["info"] for step in record["steps"] if step["info"] and step["info"].get("tool") == "submit"]
        expected = [1.5 + info["reward_terms"]["quality"] - 0.002 for info in submits]  # 2 steps a turn
        assert record["turn_rewards"] == pytest.approx(expected) and len(expected) == 2
        assert record["scores"]["tests_passed"] == record["scores"]["tests_total"] == 3
        assert record["versions"]["task"] == 1 and record["versions"]["grader"].startswith("grader")
    roles = [m["role"] for m in inline_records[0]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user", "assistant", "tool", "assistant", "tool"]


def test_process_pool_gives_the_same_data_as_inline(inline_records):
    pooled = collect(SPEC, episodes=3, workers=2, backend="processes")
    assert pooled.workers == 2 and len({r["worker"] for r in pooled.records}) == 2
    assert data_only(pooled.records) == data_only(inline_records)


@pytest.mark.ray
def test_ray_gives_the_same_data_as_inline(inline_records):
    result = collect(SPEC, episodes=3, workers=2, backend="ray")
    assert result.backend == "ray" and len({r["worker"] for r in result.records}) == 2
    assert data_only(result.records) == data_only(inline_records)


@pytest.fixture
def killed_workers_tmp(monkeypatch):
    """A worker killed with SIGKILL cannot remove its env's folder: the workers of these
    tests make their folders here (TMPDIR is inherited), and the test removes them."""
    folder = tempfile.mkdtemp(prefix="sg-killed-")
    monkeypatch.setenv("TMPDIR", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.ray
def test_a_dead_ray_actor_costs_its_episodes_as_recorded_infrastructure_failures(killed_workers_tmp):
    # The agent's command kills its parent: the actor process itself.
    spec = RolloutSpec(MINI_ID, agent="command", agent_kwargs={"command": "sh -c 'kill -9 $PPID'"}, tasks=(str(DATA),))
    result = collect(spec, episodes=2, workers=1, backend="ray")
    assert [r["failure_class"] for r in result.records] == ["infrastructure", "infrastructure"]
    assert all("worker died" in r["failure"] for r in result.records)


def test_a_dead_process_worker_is_recorded_not_lost(killed_workers_tmp):
    spec = RolloutSpec(MINI_ID, agent="command", agent_kwargs={"command": "sh -c 'kill -9 $PPID'"}, tasks=(str(DATA),))
    result = collect(spec, episodes=2, workers=1, backend="processes")
    assert [r["episode"] for r in result.records] == [0, 1]
    assert {r["failure_class"] for r in result.records} == {"infrastructure"}
    assert all("worker died" in r["failure"] for r in result.records)


def test_an_agent_that_breaks_the_protocol_is_a_framework_failure_and_collection_goes_on():
    spec = RolloutSpec(MINI_ID, agent="command", agent_kwargs={"command": "true"}, tasks=(str(DATA),))
    result = collect(spec, episodes=2, workers=1, backend="inline")
    assert [r["failure_class"] for r in result.records] == ["framework", "framework"]
    assert all(r["failure"].startswith("agent command") for r in result.records)  # exited or closed its output
    assert len(result.records[0]["steps"]) == 1  # the reset is kept


def test_an_env_fault_mid_episode_is_an_infrastructure_failure_with_the_steps_so_far():
    from stamina_gym.agents import make_agent

    env = mini_env()
    env.reset(seed=0)

    def broken_commit(message: str, **_) -> str:
        raise GitError("git commit failed: disk full")

    env.workspace.commit = broken_commit
    record = play_episode(env, make_agent("oracle"), episode=5, seed=11)
    env.close()
    assert record["failure_class"] == "infrastructure" and "disk full" in record["failure"]
    assert record["episode"] == 5 and [s["step"] for s in record["steps"]] == [0, 1]  # reset, patch; the submit raised
    assert record["scores"]["turns_graded"] == 0


def test_bad_collect_arguments_are_named():
    with pytest.raises(ConfigError, match="unknown backend 'threads'"):
        collect(SPEC, episodes=1, backend="threads")
    with pytest.raises(ConfigError, match="episodes and workers must be >= 1"):
        collect(SPEC, episodes=0)
    with pytest.raises(ConfigError, match="inline backend has exactly one worker"):
        collect(SPEC, episodes=2, workers=2, backend="inline")


def test_parquet_tables_read_back_with_pyarrow_and_datasets(inline_records, tmp_path):
    import datasets

    steps_path, episodes_path = write_parquet(inline_records, tmp_path)
    steps, episodes = pq.read_table(steps_path), pq.read_table(episodes_path)
    assert steps.num_rows == sum(len(r["steps"]) for r in inline_records) == 15
    assert episodes.num_rows == 3
    first = steps.slice(0, 5).to_pylist()
    assert [row["step"] for row in first] == [0, 1, 2, 3, 4] and first[0]["action"] is None
    assert json.loads(first[2]["action"]) == {"tool": "submit"}
    assert json.loads(first[2]["info"])["grade"]["failure_class"] is None
    assert first[2]["reward"] == pytest.approx(inline_records[0]["steps"][2]["reward"]) and first[4]["terminated"]
    assert first[3]["observation_turn"] == 2 and first[3]["turn"] == 2
    row = episodes.to_pylist()[0]
    assert row["turn_rewards"] == pytest.approx(inline_records[0]["turn_rewards"]) and row["scores"]["turns_solved"] == 2
    assert row["messages"][2]["tool_calls"][0]["function"]["name"] == "apply_patch"

    hf = datasets.Dataset.from_parquet(str(episodes_path), cache_dir=str(tmp_path / "hf"))
    assert hf.num_rows == 3 and hf[1]["seed"] == inline_records[1]["seed"]
    assert hf[0]["messages"][3] == {"role": "tool", "content": "applied patch to calc/__init__.py", "tool_calls": None,
                                    "tool_call_id": "call_1", "turn": 1, "step": 1, "reward": None}  # fmt: skip
    # A scripted agent's conversation: one assistant message per step, its reward on it,
    # the requests at the turn they open.
    messages, steps_of = row["messages"], {s["step"]: s for s in first}
    replies = [m for m in messages if m["role"] == "assistant"]
    assert [(m["step"], m["turn"], m["reward"]) for m in replies] == [
        (s["step"], s["turn"], pytest.approx(s["reward"])) for s in first[1:]]
    requests = [m for m in messages if m["role"] == "user"]
    assert [(m["turn"], m["step"]) for m in requests] == [(1, 0), (2, 2)]  # the first request; turn 2's, after submit 2
    assert steps_of[2]["action"] and "grade" in json.loads(steps_of[2]["info"])
    hf_steps = datasets.load_dataset("parquet", data_files=str(steps_path), split="train", cache_dir=str(tmp_path / "hf"))
    assert hf_steps.num_rows == 15


@pytest.mark.filterwarnings("ignore:env_spec is None")  # mini_env() is built without gym.make
def test_minari_export_loads_back_with_the_env_spaces(inline_records, tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")  # the minari extra; the test extra installs it
    from stamina_gym.rollout.datasets import export_minari, load_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    env = mini_env()
    export_minari(inline_records, "stamina/mini/oracle-v0", env)
    dataset = load_minari("stamina/mini/oracle-v0")
    assert dataset.observation_space == env.observation_space and dataset.action_space == env.action_space
    # The text spaces come back as the env's: any character, not the sampling charset.
    assert dataset.observation_space["prompt"].contains("café →") and dataset.action_space.contains("naïve ✓")
    stored = json.loads((tmp_path / "stamina" / "mini" / "oracle-v0" / "data" / "metadata.json").read_text())
    assert '"UnicodeText"' in stored["observation_space"], stored["observation_space"][:300]
    assert dataset.total_episodes == 3 and dataset.total_steps == 12
    episode = next(dataset.iterate_episodes())
    assert list(episode.observations["turn"]) == [1, 1, 2, 2, 2]
    assert json.loads(episode.actions[1]) == {"tool": "submit"}
    assert list(episode.rewards) == pytest.approx([step["reward"] for step in inline_records[0]["steps"][1:]])
    assert json.loads(episode.infos["json"][2])["grade"]["passed"] == 2
    env.close()


def test_collect_command_writes_parquet_with_the_right_row_counts(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "2", "--workers", "1",
                 "--grading-cache", str(tmp_path / "cache"), "--out", str(out)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "[2/2] episode 1" in printed and "cache 2 hit/0 miss" in printed  # the second episode repeats the first's states
    assert pq.read_table(out / "steps.parquet").num_rows == 10
    assert pq.read_table(out / "episodes.parquet").num_rows == 2
    summary = json.loads((out / "collect.json").read_text())
    assert summary["backend"] == "inline" and summary["cache_hits"] == 2 and summary["cache_misses"] == 2
    assert summary["seeds"] == episode_seeds(0, 2)


def test_collect_command_refuses_a_ray_address_without_the_ray_backend(capsys):
    code = main(["collect", "--env", MINI_ID, "--ray", "auto", "--backend", "processes"])
    assert code == 2 and "needs the ray backend" in capsys.readouterr().err


def test_collect_command_exports_a_minari_dataset_that_moves(tmp_path, monkeypatch, capsys):
    """The dataset names its env by id and task name only: moved to another folder (another
    machine's), it loads and recovers the env, with the same spaces."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "1", "--grading-cache", "none",
                 "--out", str(tmp_path / "run"), "--minari", "stamina/mini/cli-v0"])  # fmt: skip
    assert code == 0
    assert f"Minari dataset stamina/mini/cli-v0 in {tmp_path / 'minari'}" in capsys.readouterr().out
    shutil.move(tmp_path / "minari", tmp_path / "elsewhere")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "elsewhere"))
    dataset = minari.load_dataset("stamina/mini/cli-v0")
    recorded = json.dumps(dataset.spec.env_spec.to_json() if hasattr(dataset.spec.env_spec, "to_json") else str(dataset.spec.env_spec))
    assert str(tmp_path) not in recorded and str(DATA.parent.parent) not in recorded, recorded
    recovered = dataset.recover_environment()
    env = mini_env()
    try:
        assert dataset.total_episodes == 1 and dataset.observation_space == env.observation_space
        assert recovered.observation_space == env.observation_space and recovered.action_space == env.action_space
    finally:
        env.close()
        recovered.close()


def test_collect_writes_its_minari_dataset_under_out_unless_told_where(tmp_path, monkeypatch, capsys):
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", "unset below")  # restored (to absent, if so) after the test
    monkeypatch.delenv("MINARI_DATASETS_PATH")
    out = tmp_path / "run"
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "1", "--grading-cache", "none",
                 "--out", str(out), "--minari", "stamina/mini/here-v0"])  # fmt: skip
    assert code == 0 and f"Minari dataset stamina/mini/here-v0 in {out / 'minari'}" in capsys.readouterr().out
    assert (out / "minari" / "stamina" / "mini" / "here-v0" / "data" / "metadata.json").is_file()
    assert "MINARI_DATASETS_PATH" not in os.environ


def test_collect_starts_each_episode_at_a_drawn_turn(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "4", "--workers", "1", "--start-turn", "1", "2",
                 "--grading-cache", "none", "--out", str(out)])  # fmt: skip
    assert code == 0
    episodes = pq.read_table(out / "episodes.parquet").to_pylist()
    starts = [e["start_turn"] for e in episodes]
    assert set(starts) == {1, 2} and all(len(e["turn_rewards"]) == 3 - e["start_turn"] for e in episodes), starts
    assert all(e["scores"]["turns_solved"] == e["scores"]["turns_graded"] for e in episodes)  # the oracle from there on


def test_a_killed_collection_is_resumed_without_playing_an_episode_twice(tmp_path):
    """``collect`` journals each episode as it ends; killed after the first (SIGKILL, mid
    episode), ``--resume`` plays only the others: three rows, each episode once, the
    first one's record the one played before the kill. Other arguments are refused."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "stamina_gym.cli", "collect", "--env", MINI_ID, "--tasks", str(DATA),
               "--episodes", "3", "--grading-cache", "none", "--out", str(out)]  # fmt: skip
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in first.stdout:
        if line.lstrip().startswith("[1/3]"):
            first.kill()
            break
    first.wait(timeout=60)
    before = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()[1:]]
    assert [r["episode"] for r in before] == [0] and not (out / "episodes.parquet").exists()
    refused = subprocess.run([*command[:-4], "--episodes", "4", "--grading-cache", "none", "--out", str(out), "--resume"],
                             capture_output=True, text=True)  # fmt: skip
    assert refused.returncode == 2 and "other arguments (episodes)" in refused.stderr, refused.stderr
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming: 1 episode(s) recorded" in resumed.stdout and "[2/3] episode 1" in resumed.stdout
    episodes = pq.read_table(out / "episodes.parquet").to_pylist()
    assert [e["episode"] for e in episodes] == [0, 1, 2] and all(e["failure_class"] is None for e in episodes)
    assert episodes[0]["duration_s"] == before[0]["duration_s"] and episodes[0]["worker"] == before[0]["worker"]
    assert pq.read_table(out / "steps.parquet").num_rows == 15


def test_collect_exits_1_naming_the_episodes_lost_after_their_retries(tmp_path, capsys, killed_workers_tmp):
    """Every attempt's worker dies (the agent kills it): each episode is played 1 + 1
    times, recorded as infrastructure with its attempts, and collect says so and exits 1."""
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "2", "--backend", "processes",
                 "--agent", "command", "--agent-arg", "command=sh -c 'kill -9 $PPID'", "--retries", "1",
                 "--grading-cache", "none", "--out", str(tmp_path / "run")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
    assert "2 episode(s) failed as infrastructure after 2 attempt(s) each: episode 0: the worker died" in captured.err
    assert "--resume" in captured.err and "queued again" in captured.out
    episodes = pq.read_table(tmp_path / "run" / "episodes.parquet").to_pylist()
    assert [(e["failure_class"], e["attempts"]) for e in episodes] == [("infrastructure", 2)] * 2


def _tiny_tokenizer(folder: Path) -> Path:
    """A byte-level BPE tokenizer trained here on a few lines, with a chat template that
    writes each message as <|role|>...<|end|> (tool calls as <call>name arguments</call>)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    model = tokenizers.Tokenizer(tokenizers.models.BPE())
    model.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=400, special_tokens=["<|end|>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    model.train_from_iterator(["def add(a, b):\n    return a + b\n", "submit apply_patch read_file", "café →"], trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=model, eos_token="<|end|>")
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
        "{% for c in m.get('tool_calls') or [] %}<call>{{ c['function']['name'] }} {{ c['function']['arguments'] | tojson }}</call>{% endfor %}"
        "<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    tokenizer.save_pretrained(folder)
    return folder


def test_collect_retokenises_each_episode_with_an_assistant_loss_mask(tmp_path, capsys):
    """--tokenizer: each episode's token ids are the tokenizer's of its rendered
    conversation, and the mask is 1 exactly on the tokens of the assistant replies."""
    folder = _tiny_tokenizer(tmp_path / "tokenizer")
    from transformers import AutoTokenizer

    out = tmp_path / "run"
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "1", "--grading-cache", "none",
                 "--out", str(out), "--tokenizer", str(folder)])  # fmt: skip
    assert code == 0 and "retokenised 1 episode(s)" in capsys.readouterr().out
    (episode,) = pq.read_table(out / "episodes.parquet").to_pylist()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    messages = [{k: m[k] for k in ("role", "content", "tool_calls", "tool_call_id") if m[k] is not None} for m in episode["messages"]]
    for message in messages:
        message.setdefault("content", "")
        for call in message.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    text = tokenizer.apply_chat_template(messages, tools=json.loads(episode["tools"]), tokenize=False)
    assert episode["token_ids"] == tokenizer(text, add_special_tokens=False)["input_ids"]
    assert episode["tokens_source"] == "retokenised" and len(episode["loss_mask"]) == len(episode["token_ids"])
    kept = tokenizer.decode([t for t, m in zip(episode["token_ids"], episode["loss_mask"]) if m])
    replies = [m for m in messages if m["role"] == "assistant"]
    assert kept.count("<call>") == len(replies) == 4 and "<|tool|>" not in kept and "<|user|>" not in kept
    assert kept.startswith("<call>apply_patch") and kept.endswith("<|end|>")
    assert sum(episode["loss_mask"]) < len(episode["loss_mask"]) / 2  # the tool results and requests are most of it


def test_a_tokenizer_that_cannot_be_used_is_refused_before_anything_is_played(tmp_path, capsys):
    code = main(["collect", "--env", MINI_ID, "--tasks", str(DATA), "--episodes", "1", "--out", str(tmp_path / "run"),
                 "--tokenizer", str(tmp_path / "missing")])  # fmt: skip
    assert code == 2 and f"--tokenizer {tmp_path / 'missing'}" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
