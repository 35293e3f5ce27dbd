"""Datasets from rollout records: two Parquet tables and a Minari export.

``steps.parquet``: one row per step, and one row with ``step == 0`` per episode for the
reset (its ``action`` and ``info`` are those of the reset: no action, the variants), so
the observations of an episode are its rows in ``step`` order (the ``N + 1`` observations
of ``N`` actions) and the action of row ``k`` was taken on the observation of row
``k - 1``. Columns: ``episode``, ``seed``, ``step``, ``turn`` (1-based turn the action
belongs to), ``observation_prompt``, ``observation_output``, ``observation_repo``,
``observation_phase``, ``observation_turn`` (the observation's turn, from 1), ``action``
(the action text, JSON), ``reward``, ``terminated``, ``truncated``, ``info`` (JSON text),
``grading_cache`` (``hit``/``miss``/null at a submit), ``model_call`` (for a model agent,
the ``call`` of ``calls.parquet`` whose reply holds this action; else null).

``episodes.parquet``: one row per episode: ``messages`` (the OpenAI-style conversation:
for a model agent the one it really had, system prompt, every reply, tool result and
nudge, call ids kept, ``messages_source == "model"``; for a scripted agent rebuilt from
the steps, ``stamina_gym.chat.episode_messages``, ``"rebuilt"``; absent message keys are
null; each message also carries ``turn``, ``step`` and, on an assistant message,
``reward``: the step it came from and the reward of the steps it made, from the record's
``message_places``), ``tools`` (the tool schemas offered, JSON text), ``turn_rewards`` (per turn, the sum
of *every* step's reward in it: step costs and refused actions included),
``submit_rewards`` (per graded turn, the reward of its submit step alone),
``turn_failure_classes``, ``scores`` (a struct), ``seed``, ``variants``, ``start_turn``
(the turn it began at, ``collect --start-turn``), ``versions``,
``failure_class``/``failure`` (set when the episode broke), ``token_ids``, ``loss_mask``
and ``tokens_source`` (null unless ``collect --tokenizer`` retokenised the conversation:
``stamina_gym.rollout.tokens``), and the operational columns
``duration_s``, ``worker``, ``attempts`` (how many times it was played: an infrastructure
failure is played again), ``cache_hits``, ``cache_misses``.

``calls.parquet`` (written when a model agent played): one row per model call, with the
exact request as sent (``request``, JSON text: model, messages, tools, sampling
parameters), the ``reply`` (JSON text: content and tool calls, ids kept), ``finish_reason``,
``trimmed`` (the context dropped or cut messages for this call), ``prompt_tokens`` and
``completion_tokens`` (the endpoint's count), keyed by ``episode`` and ``call``.

All read directly with ``pyarrow.parquet.read_table`` and with the ``datasets`` library
(``Dataset.from_parquet`` or ``load_dataset("parquet", data_files=...)``).

Minari (``export_minari``, the ``minari`` extra) stores the env's own spaces: the
observation ``Dict`` of ``Text`` fields and a ``Discrete`` turn, the ``Text`` action,
in Minari's ``arrow`` format, which writes ``Text`` as an Arrow string column. Minari
wants the same info keys at every step, so each step's info is one JSON text under the
key ``json``. Episodes that broke before their first action have no transition and are
left out of the Minari dataset (they stay in the Parquet tables).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

STEPS_FILE = "steps.parquet"
EPISODES_FILE = "episodes.parquet"
CALLS_FILE = "calls.parquet"
OBSERVATION_KEYS = ("prompt", "output", "repo", "phase", "turn")


def _schemas() -> tuple[Any, Any]:
    import pyarrow as pa

    steps = pa.schema(
        [
            ("episode", pa.int64()), ("seed", pa.int64()), ("step", pa.int32()), ("turn", pa.int32()),
            ("observation_prompt", pa.string()), ("observation_output", pa.string()), ("observation_repo", pa.string()),
            ("observation_phase", pa.string()), ("observation_turn", pa.int32()),
            ("action", pa.string()), ("reward", pa.float64()), ("terminated", pa.bool_()), ("truncated", pa.bool_()),
            ("info", pa.string()), ("grading_cache", pa.string()), ("model_call", pa.int32()),
        ]
    )  # fmt: skip
    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
    message = pa.struct(
        [("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)), ("tool_call_id", pa.string()),
         ("turn", pa.int32()), ("step", pa.int32()), ("reward", pa.float64())]
    )  # fmt: skip
    scores = pa.struct(
        [("total_reward", pa.float64()), ("turns_graded", pa.int32()), ("turns_solved", pa.int32()),
         ("tests_passed", pa.int32()), ("tests_total", pa.int32()), ("newly_broken", pa.int32())]
    )  # fmt: skip
    versions = pa.struct(
        [("stamina_gym", pa.string()), ("task", pa.int32()), ("grader", pa.string()),
         ("gymnasium", pa.string()), ("python", pa.string())]
    )  # fmt: skip
    episodes = pa.schema(
        [
            ("episode", pa.int64()), ("seed", pa.int64()), ("env_id", pa.string()), ("task", pa.string()),
            ("agent", pa.string()), ("variants", pa.list_(pa.int32())), ("start_turn", pa.int32()),
            ("messages", pa.list_(message)),
            ("messages_source", pa.string()), ("tools", pa.string()),
            ("turn_rewards", pa.list_(pa.float64())), ("submit_rewards", pa.list_(pa.float64())),
            ("turn_failure_classes", pa.list_(pa.string())),
            ("scores", scores), ("num_steps", pa.int32()), ("terminated", pa.bool_()), ("truncated", pa.bool_()),
            ("failure_class", pa.string()), ("failure", pa.string()), ("versions", versions),
            ("token_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int8())), ("tokens_source", pa.string()),
            ("duration_s", pa.float64()), ("worker", pa.string()), ("attempts", pa.int32()),
            ("cache_hits", pa.int32()), ("cache_misses", pa.int32()),
        ]
    )  # fmt: skip
    return steps, episodes


def step_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        for step in record["steps"]:
            observation = step["observation"]
            rows.append(
                {
                    "episode": record["episode"], "seed": record["seed"], "step": step["step"], "turn": step["turn"],
                    **{f"observation_{key}": observation[key] for key in OBSERVATION_KEYS},
                    "action": step["action"], "reward": step["reward"], "terminated": step["terminated"],
                    "truncated": step["truncated"], "info": json.dumps(step["info"], sort_keys=True),
                    "grading_cache": step["grading_cache"], "model_call": step.get("model_call"),
                }
            )  # fmt: skip
    return rows


def call_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model call of every record (``calls.parquet``)."""
    rows = []
    for record in records:
        for call in record.get("model_calls") or []:
            usage = call.get("usage") or {}
            rows.append({
                "episode": record["episode"], "seed": record["seed"], "call": call["call"], "turn": call["turn"],
                "request": json.dumps(call["request"], ensure_ascii=False), "reply": json.dumps(call["reply"], ensure_ascii=False),
                "finish_reason": call.get("finish_reason"), "trimmed": bool(call.get("trimmed")),
                "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            })  # fmt: skip
    return rows


def episode_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    _, schema = _schemas()
    names = schema.names
    rows = []
    for record in records:
        row = {name: record.get(name) for name in names}
        row["versions"] = record["versions"] or None
        places = record.get("message_places") or [{}] * len(record["messages"])
        row["messages"] = [{**message, **place} for message, place in zip(record["messages"], places)]
        rows.append(row)
    return rows


_CALLS_SCHEMA = [
    ("episode", "int64"), ("seed", "int64"), ("call", "int32"), ("turn", "int32"), ("request", "string"),
    ("reply", "string"), ("finish_reason", "string"), ("trimmed", "bool_"), ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
]  # fmt: skip


class Journal:
    """``records.jsonl`` in a collection's folder: each final record appended (and flushed)
    as it comes, so a collection killed half way keeps what it played, and ``collect
    --resume`` continues from it. Its first line is the collection's arguments; a resume
    with other arguments is refused, naming them. A last line cut by a kill is dropped."""

    FILE = "records.jsonl"

    def __init__(self, out: Path, arguments: dict[str, Any], *, resume: bool) -> None:
        from stamina_gym.errors import ConfigError

        self.path = out / self.FILE
        header = json.loads(json.dumps({"collection": arguments}, default=list))
        self._records: list[dict[str, Any]] = []
        if resume:
            if not self.path.is_file():
                raise ConfigError(f"--resume: {self.path} does not exist, so there is nothing to continue")
            lines = self.path.read_text(encoding="utf-8").splitlines()
            try:
                first = json.loads(lines[0]) if lines else {}
            except json.JSONDecodeError:
                first = {}
            if first != header:
                theirs = first.get("collection", {})
                changed = sorted(k for k in {*theirs, *arguments} if theirs.get(k) != header["collection"].get(k))
                raise ConfigError(f"--resume: {self.path} is of a collection with other arguments "
                                  f"({', '.join(changed) or 'no header'}): give the same ones")  # fmt: skip
            for number, line in enumerate(lines[1:], start=2):
                try:
                    self._records.append(json.loads(line))
                except json.JSONDecodeError:
                    if number != len(lines):
                        raise ConfigError(f"--resume: line {number} of {self.path} does not parse") from None
            # Rewritten whole: a cut last line goes, and later lines follow a complete one.
            self._write([header, *self._records], mode="w")
        else:
            if self.path.exists() and self.path.stat().st_size:
                raise ConfigError(f"{self.path} exists: continue it with --resume, or choose another --out")
            self._write([header], mode="w")

    def records(self) -> list[dict[str, Any]]:
        """The records kept by earlier runs, the last one of each episode."""
        return list({record["episode"]: record for record in self._records}.values())

    def add(self, record: dict[str, Any]) -> None:
        self._write([record], mode="a")

    def _write(self, lines: list[dict[str, Any]], mode: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open(mode, encoding="utf-8") as handle:
            handle.writelines(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
            handle.flush()
            os.fsync(handle.fileno())


def write_parquet(records: Sequence[dict[str, Any]], out: Path) -> tuple[Path, Path]:
    """Write ``steps.parquet`` and ``episodes.parquet`` into ``out`` (and ``calls.parquet``
    when a model agent played); returns the first two paths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    steps_schema, episodes_schema = _schemas()
    out.mkdir(parents=True, exist_ok=True)
    steps_path, episodes_path = out / STEPS_FILE, out / EPISODES_FILE
    pq.write_table(pa.Table.from_pylist(step_rows(records), schema=steps_schema), steps_path)
    pq.write_table(pa.Table.from_pylist(episode_rows(records), schema=episodes_schema), episodes_path)
    calls = call_rows(records)
    if calls:
        schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in _CALLS_SCHEMA])
        pq.write_table(pa.Table.from_pylist(calls, schema=schema), out / CALLS_FILE)
    return steps_path, episodes_path


def register_minari_spaces() -> None:
    """Teach Minari the env's text space (``UnicodeText``, any character) so that a
    dataset stores it as itself: Minari would store a ``Text`` with the sampling charset,
    printable ASCII, and load it back as a space that refuses ``café``. Loading such a
    dataset needs this registration too: ``load_minari`` does it."""
    from minari.serialization import deserialize_space, serialize_space

    from stamina_gym.text_space import UnicodeText

    @serialize_space.register(UnicodeText)
    def _serialize(space: UnicodeText, to_string: bool = True) -> dict | str:
        described = {"type": "UnicodeText", "max_length": space.max_length, "min_length": space.min_length,
                     "charset": space.characters}  # fmt: skip
        return json.dumps(described) if to_string else described

    @deserialize_space.register("UnicodeText")
    def _deserialize(described: dict) -> UnicodeText:
        return UnicodeText(described["max_length"], min_length=described["min_length"], charset=described["charset"])


def load_minari(dataset_id: str) -> Any:
    """``minari.load_dataset`` of a stamina-gym dataset, with its text spaces as the env's."""
    import minari

    register_minari_spaces()
    return minari.load_dataset(dataset_id)


def export_minari(records: Sequence[dict[str, Any]], dataset_id: str, env: Any, *, description: str = "") -> Any:
    """Create the Minari dataset ``dataset_id`` (under ``MINARI_DATASETS_PATH``, Minari's
    own setting, default ``~/.minari/datasets``; ``collect --minari`` sets it to the
    collection's folder when unset) from the records, its spaces the env's own (see
    ``register_minari_spaces``); returns it."""
    try:
        import minari
        from minari.data_collector.episode_buffer import EpisodeBuffer
    except ImportError:
        raise ImportError("the Minari export needs the minari extra: pip install 'stamina-gym[minari]'") from None
    register_minari_spaces()

    buffers = []
    for record in records:
        steps = record["steps"]
        if len(steps) < 2:
            continue
        observations = {key: [step["observation"][key] for step in steps] for key in OBSERVATION_KEYS}
        buffers.append(
            EpisodeBuffer(
                id=len(buffers),
                seed=record["seed"],
                observations=observations,
                actions=[step["action"] for step in steps[1:]],
                rewards=[step["reward"] for step in steps[1:]],
                terminations=[step["terminated"] for step in steps[1:]],
                truncations=[step["truncated"] for step in steps[1:]],
                infos={"json": [json.dumps(step["info"], sort_keys=True) for step in steps]},
            )
        )
    if not buffers:
        raise ValueError("no episode reached its first action: nothing to export to Minari")
    agents = sorted({record["agent"] for record in records})
    with warnings.catch_warnings():
        # Minari asks for a code link, an e-mail and an evaluation env; none applies here.
        warnings.filterwarnings("ignore", message=r"`(code_permalink|author_email|eval_env)` is set to None")
        return minari.create_dataset_from_buffers(
            dataset_id=dataset_id,
            buffer=buffers,
            env=env,
            algorithm_name=",".join(agents),
            author="stamina-gym",
            description=description or f"stamina-gym rollouts of {', '.join(agents)}",
            data_format="arrow",
        )
