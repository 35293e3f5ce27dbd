"""The TRL adapter, driven by TRL's own GRPOTrainer (the trl extra: torch, transformers).

The model is a 2-layer Llama made here from a config, with a tokenizer trained here; a
forward hook pushes its last logits toward the next token of a script, so TRL's own
generation, tool-call parsing and tool loop run on real token ids: the model reads a
file, applies the mini task's turn-1 reference patch and submits. Nothing comes from a
model hub."""

from __future__ import annotations

import inspect
import json
import time

import pytest

from tests.conftest import DATA

trl = pytest.importorskip("trl")  # the trl extra, on the Python versions TRL supports

# TRL's and transformers' own deprecation notices (gradient_checkpointing's new name) are not ours.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning")]

FORCE = 1e4
"""Added to the scripted token's logit: far above anything the tiny model gives."""


@pytest.fixture(autouse=True)
def mini_registered(monkeypatch):
    import stamina_gym

    monkeypatch.setenv("STAMINA_GYM_TASKS", str(DATA))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    stamina_gym.register_envs()


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    """Nothing from a model hub: the switch huggingface_hub read at its import, and the
    variable, for whatever reads it later."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def _patch(turn: int) -> str:
    """The mini task's reference patch of ``turn`` (from 0)."""
    import gymnasium as gym

    env = gym.make("Stamina-mini-v1")
    try:
        return env.unwrapped.turns[turn].reference_patch
    finally:
        env.close()


def _call(name: str, arguments: dict) -> str:
    """An assistant turn with one tool call, as the Qwen 2.5 template writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def _tokenizer(texts: list[str]):
    """A byte-level BPE tokenizer trained on ``texts``, with the Qwen 2.5 chat template
    that TRL ships (TRL knows how to parse its tool calls)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)  # fmt: skip
    bpe.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        chat_template=qwen2_5_chat_template, clean_up_tokenization_spaces=False)  # fmt: skip
    tokenizer.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"])
    return tokenizer


def _scripted_model(tokenizer, turns: list[str], seen: list[list[int]]):
    """A tiny Llama whose generation says ``turns``, one assistant turn after each tool
    result: a forward hook reads the input ids (generation runs without a KV cache, so it
    sees the whole sequence; the latest are kept in ``seen``), counts the tool results so
    far to pick the turn and the tokens since the last assistant header to pick the token,
    and adds ``FORCE`` to that token's logit at the last position. The Llama's own weights
    stay in the sum, so training has gradients."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32768,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.pad_token_id, use_cache=False)  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    script = [tokenizer.encode(text, add_special_tokens=False) for text in turns] + [[tokenizer.eos_token_id]]
    start, result = tokenizer.convert_tokens_to_ids(["<|im_start|>", "<tool_response>"])
    header = len(tokenizer.encode("assistant\n", add_special_tokens=False))

    def next_token(ids: list[int]) -> int:
        said = ids[::-1].index(start) - header if start in ids else 0  # tokens after the last header
        turn = script[min(ids.count(result), len(script) - 1)]
        return turn[said] if 0 <= said < len(turn) else tokenizer.eos_token_id

    def force(module, args, kwargs, output):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None or getattr(output, "logits", None) is None:  # TRL's loss forward returns no logits
            return output
        seen[:] = ids.tolist()
        push = torch.zeros_like(output.logits[:, -1])
        for row, row_ids in enumerate(seen):
            push[row, next_token(row_ids)] = FORCE
        output.logits = torch.cat([output.logits[:, :-1], (output.logits[:, -1] + push)[:, None]], dim=1)
        return output

    model.register_forward_hook(force, with_kwargs=True)
    return model


def test_the_methods_are_the_env_tools_as_trl_sees_them():
    from transformers.utils import get_json_schema

    from stamina_gym.integrations.trl import StaminaTRLEnv
    from stamina_gym.tools import TOOLS

    # TRL's rule: the class's functions, but reset, get_reward and underscored names.
    functions = [name for name, _ in inspect.getmembers(StaminaTRLEnv, inspect.isfunction) if not name.startswith("_")]
    assert sorted(functions) == sorted([*TOOLS, "reset"])
    public = {name for name in dir(StaminaTRLEnv) if not name.startswith("_")}
    assert public - set(functions) == {"steps"} and isinstance(StaminaTRLEnv.steps, property)
    for name, tool in TOOLS.items():
        schema = get_json_schema(getattr(StaminaTRLEnv, name))["function"]
        assert schema["description"].startswith(tool.doc)
        assert set(schema["parameters"]["properties"]) == set(tool.params)
        assert set(schema["parameters"].get("required", [])) == {k for k, p in tool.params.items() if p.required}


def test_submit_brings_the_next_request_and_the_env_closes_with_its_instance():
    import gc

    from stamina_gym.integrations.trl import StaminaTRLEnv, stamina_reward

    env = StaminaTRLEnv("Stamina-mini-v1")
    opening = env.reset(prompt=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": ""}], seed=0)
    assert opening.startswith("Turn 1 (") and "Repository:" in opening
    assert "Call submit when" in env.reset(prompt=[{"role": "user", "content": ""}], seed=0, other_column=1)
    assert env.reset(prompt=[{"role": "user", "content": "Hi."}], seed=0).startswith("\n\nYou are the developer")
    assert "This episode starts at request 2" in env.reset(seed=1, start_turn=2)
    assert env.reset(seed=0).count("Turn 1 (") == 1
    assert "lines 1-1 of 1" in env.read_file("calc/__init__.py", end=1)
    assert env.read_file("calc/__init__.py", start=0).startswith("error:")
    env.apply_patch(_patch(0))
    graded, _, request = env.submit().partition("\n\n")
    assert graded.startswith("Turn 1 graded") and request.startswith("Turn 2 (")
    env.apply_patch(_patch(1))
    assert "That was the last request." in env.submit() and env.list_files() == "not run: the episode is over"
    assert [tool for tool, _ in env.steps][-2:] == ["apply_patch", "submit"] and stamina_reward([env])[0] > 2
    closer = env._closer
    del env
    gc.collect()
    assert not closer.alive


def test_grpo_trainer_plays_the_env_through_its_tool_loop(tmp_path):
    import functools

    from stamina_gym.integrations.trl import StaminaTRLEnv

    _train_and_check(functools.partial(StaminaTRLEnv, "Stamina-mini-v1"), tmp_path)


def test_grpo_trainer_plays_a_served_env_over_openenv(tmp_path):
    """TRL's OpenEnv path: each environment a session of a ``stamina-gym serve`` process."""
    import functools

    pytest.importorskip("openenv.core")
    from stamina_gym.integrations.trl import StaminaTRLEnv
    from tests.test_serve import MINI_ARGS, Server

    server = Server(tmp_path, *MINI_ARGS, "--max-sessions", "4", "--action-format", "json")
    try:
        with pytest.raises(ValueError, match="made by its server"):
            StaminaTRLEnv(base_url=server.url, max_turns=1)
        trainer = _train_and_check(functools.partial(StaminaTRLEnv, base_url=server.url), tmp_path)
        for env in trainer.environments:
            env._closer()  # TRL never closes them: the sessions end here, and the server closes their envs
        deadline = time.monotonic() + 30
        while server.workspaces():
            assert time.monotonic() < deadline, server.workspaces()
            time.sleep(0.2)
    finally:
        server.stop()


def _train_and_check(factory, tmp_path):
    """One GRPOTrainer step on two rollouts of the scripted model through ``factory``'s
    environments, and what must have gone through TRL; returns the trainer."""
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    from stamina_gym.integrations.trl import StaminaTRLEnv, stamina_reward
    from stamina_gym.tools import TOOLS

    opening = factory().reset(seed=0)
    read, patch = {"path": "calc/__init__.py"}, {"patch": _patch(0)}
    turns = [_call("read_file", read), _call("apply_patch", patch), _call("submit", {})]
    # Trained on the script and on the prompt's text (the opening, the tool schemas): short sequences.
    schemas = [get_json_schema(getattr(StaminaTRLEnv, name)) for name in TOOLS]
    tokenizer = _tokenizer([*turns * 4, opening, json.dumps(schemas)])
    seen: list[list[int]] = []
    model = _scripted_model(tokenizer, turns, seen)

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=4096, learning_rate=1e-3, logging_steps=1, report_to="none",
                      save_strategy="no", bf16=False, use_cpu=True, disable_tqdm=True,
                      generation_kwargs={"use_cache": False})  # fmt: skip
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]], "seed": [0]})
    trainer = GRPOTrainer(model=model, reward_funcs=stamina_reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer, environment_factory=factory)  # fmt: skip
    trainer.train()

    assert sorted(tool.__name__ for tool in trainer.tools) == sorted(TOOLS)  # what TRL made tools of
    environments = trainer.environments
    assert len(environments) == 2
    for env in environments:
        assert [tool for tool, _ in env.steps] == ["read_file", "apply_patch", "submit"]
        assert env.steps[-1][1] > 1  # the submit passed turn 1's hidden tests
    logged = next(entry for entry in trainer.state.log_history if "rewards/stamina_reward/mean" in entry)
    expected = sum(stamina_reward(environments)) / 2
    assert logged["rewards/stamina_reward/mean"] == pytest.approx(expected) and expected > 1
    assert logged["tools/call_frequency"] == 3 and logged["tools/failure_frequency"] == 0
    # The last generation's context: submit's tool message carried the next request to the model.
    assert "Turn 2 (" in tokenizer.decode(seen[0]).rpartition("<tool_response>")[2]
    return trainer
