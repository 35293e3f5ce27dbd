"""StaminaEnv served over OpenEnv's protocol (``pip install 'stamina-gym[serve]'``).

``stamina-gym serve`` runs ``make_app``'s FastAPI app: OpenEnv's HTTP/WebSocket server
(``openenv.core.env_server``) with one StaminaEnv, and so one sandbox, per WebSocket
session. OpenEnv's server keeps the session limit (a connection past it is refused with
``CAPACITY_REACHED``) and the idle timeout (an idle session is closed by its reaper, which
looks every quarter of the timeout, at least every 5 s); a session's env is closed when its
client disconnects or is reaped, and every env still open when the server stops.

The wire types:

* ``StaminaAction(text=...)``: one env action as text, the way the env takes it
  (``{"tool": "read_file", "path": "todo/app.py"}``; in the ``tolerant`` format, a model's
  raw output);
* ``StaminaObservation``: the env's observation fields (``prompt``, ``output``, ``repo``,
  ``phase``, ``turn``) and its ``info``, with OpenEnv's ``reward`` and ``done``
  (terminated or truncated; which one is in ``info``);
* ``reset`` takes ``seed``, ``start_turn`` (a turn, or a list to draw from) and
  ``num_turns`` (a window of that many turns).

``StaminaClient`` is OpenEnv's ``EnvClient`` for these types::

    with StaminaClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        result = env.step(StaminaAction(text='{"tool": "list_files"}'))

Importing this module (or any of ``openenv.core``) imports gradio, a few seconds:
openenv-core 0.3.0 requires it, and its package ``__init__`` imports the server, whose
web interface imports gradio, before the client's module.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Callable

import gymnasium as gym

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("serving needs OpenEnv: pip install 'stamina-gym[serve]'") from exc
from fastapi.responses import JSONResponse
from pydantic import Field
from starlette.websockets import WebSocketDisconnect
from uvicorn.protocols.utils import ClientDisconnected

import stamina_gym  # noqa: F401 - registers the env ids

_LOG = logging.getLogger("uvicorn.error")  # uvicorn's own logger: its level is --log-level


class StaminaAction(Action):
    """One env action, as the env's text action space takes it."""

    text: str = Field(description='the action: a JSON tool call such as {"tool": "list_files"}, or in the '
                                  "tolerant format a model's raw output")  # fmt: skip


class StaminaObservation(Observation):
    """The env's observation, its step info, and OpenEnv's reward and done."""

    prompt: str = Field(default="", description="the current turn's request")
    output: str = Field(default="", description="what the last action printed")
    repo: str = Field(default="", description="the repository's files, as the env lists them")
    phase: str = Field(default="", description="the project's phase at this turn")
    turn: int = Field(default=0, description="the current turn's number (from 1, as in the gym observation)")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info of the reset or step")


class StaminaState(State):
    """Where the session's episode is."""

    env_id: str = ""
    turn: int = 0
    phase: str = ""
    done: bool = True
    total_reward: float = 0.0


class StaminaOpenEnv(Environment):
    """One StaminaEnv behind OpenEnv's ``Environment`` interface (one per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str = "StaminaTodo-v2", *, on_close: Callable[["StaminaOpenEnv"], None] | None = None,
                 **make_kwargs: Any) -> None:  # fmt: skip
        super().__init__()
        self._on_close = on_close
        # Without gymnasium's passive checker: after a first reset that raised (a bad
        # start_turn from a client), its first-step check fails on every later step.
        self.env = gym.make(env_id, disable_env_checker=True, **make_kwargs)
        self._state = StaminaState(env_id=env_id)

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              start_turn: int | list[int] | None = None, num_turns: int | None = None,
              **kwargs: Any) -> StaminaObservation:  # fmt: skip
        if kwargs:
            raise ValueError(f"reset takes seed, episode_id, start_turn and num_turns; not {', '.join(sorted(kwargs))}")
        window = {key: value for key, value in (("start_turn", start_turn), ("num_turns", num_turns)) if value is not None}
        options = window or None
        observation, info = self.env.reset(seed=seed, options=options)
        self._state = StaminaState(env_id=self._state.env_id, episode_id=episode_id, step_count=0,
                                   turn=int(observation["turn"]), phase=observation["phase"], done=False)  # fmt: skip
        return _observation(observation, info, reward=None, done=False)

    def step(self, action: StaminaAction, timeout_s: float | None = None, **kwargs: Any) -> StaminaObservation:
        if self._state.done:
            raise RuntimeError("the episode is over (or never began): reset first")
        observation, reward, terminated, truncated, info = self.env.step(action.text)
        done = bool(terminated or truncated)
        state = self._state
        state.step_count += 1
        state.turn, state.phase, state.done = int(observation["turn"]), observation["phase"], done
        state.total_reward += float(reward)
        info = {**info, "terminated": bool(terminated), "truncated": bool(truncated)}
        return _observation(observation, info, reward=float(reward), done=done)

    @property
    def state(self) -> StaminaState:
        return self._state.model_copy()

    def close(self) -> None:
        self.env.close()
        if self._on_close is not None:
            self._on_close(self)


def _observation(observation: dict, info: dict, *, reward: float | None, done: bool) -> StaminaObservation:
    return StaminaObservation(prompt=observation["prompt"], output=observation["output"], repo=observation["repo"],
                              phase=observation["phase"], turn=int(observation["turn"]), info=info, reward=reward,
                              done=done)  # fmt: skip


class ServerFull(RuntimeError):
    """No env can be made: the server holds as many as it may."""


class _Sessions:
    """The factory of the server's envs; remembers the open ones so that stopping the
    server closes every sandbox, whatever OpenEnv's own teardown did."""

    def __init__(self, env_id: str, make_kwargs: dict[str, Any], limit: int) -> None:
        gym.spec(env_id)  # an unknown id fails here, when the server starts, not at the first client
        self.env_id, self.make_kwargs, self.limit = env_id, make_kwargs, limit
        self.__name__ = f"{env_id} envs"  # how OpenEnv names the factory in its errors
        self._open: list[StaminaOpenEnv] = []
        self._making = 0
        self._lock = threading.Lock()

    def __call__(self) -> StaminaOpenEnv:
        # OpenEnv's HTTP /reset and /step make an env per request outside its session
        # count: the limit on envs, and so on sandboxes, is kept here.
        with self._lock:
            if len(self._open) + self._making >= self.limit:
                raise ServerFull(f"the server already holds {self.limit} envs, its limit (--max-sessions)")
            self._making += 1
        try:
            env = StaminaOpenEnv(self.env_id, on_close=self.closed, **self.make_kwargs)
        finally:
            with self._lock:
                self._making -= 1
        with self._lock:
            self._open.append(env)
        return env

    def closed(self, env: StaminaOpenEnv) -> None:
        with self._lock:
            if env in self._open:
                self._open.remove(env)

    def open_count(self) -> int:
        with self._lock:
            return len(self._open)

    def close_all(self) -> int:
        """Close every env still open; returns how many there were."""
        with self._lock:
            envs, self._open = self._open, []
        for env in envs:
            env.env.close()
        return len(envs)

    def stop(self) -> None:
        """The app's shutdown: close what is open, and say so."""
        print(f"stopped: closed the {self.close_all()} session(s) still open", file=sys.stderr, flush=True)


class _QuietDisconnect:
    """ASGI middleware: a WebSocket session whose client went away ends in one log line.
    OpenEnv's endpoint closes the socket in its ``finally`` even when the client already
    has, and that close raises ``WebSocketDisconnect``, which uvicorn logs as a traceback
    of some 60 lines for every normal disconnect. The session's env is closed either way
    (OpenEnv's own cleanup runs before that close)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except (WebSocketDisconnect, ClientDisconnected) as exc:
            host, port = scope.get("client") or ("?", "?")
            _LOG.info("session from %s:%s: the client disconnected (%s)", host, port, getattr(exc, "code", "") or "gone")


def make_app(env_id: str = "StaminaTodo-v2", *, max_sessions: int = 16, idle_timeout_s: float | None = 600.0,
             **make_kwargs: Any):  # fmt: skip
    """OpenEnv's FastAPI app serving ``env_id`` (``gym.make`` keyword arguments in
    ``make_kwargs``): at most ``max_sessions`` sessions at once, each closed after
    ``idle_timeout_s`` seconds without a message (None: never). ``app.state.sessions``
    counts the open envs."""
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
    if idle_timeout_s is not None and idle_timeout_s <= 0:
        raise ValueError(f"idle_timeout_s must be positive (or None: no timeout), not {idle_timeout_s}")
    sessions = _Sessions(env_id, make_kwargs, max_sessions)
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s)
    app = create_fastapi_app(sessions, StaminaAction, StaminaObservation, concurrency_config=concurrency)
    app.state.sessions = sessions

    async def full(request: Any, exc: ServerFull) -> JSONResponse:
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    app.add_exception_handler(ServerFull, full)
    app.add_middleware(_QuietDisconnect)
    app.router.on_shutdown.append(sessions.stop)
    return app


class StaminaClient(EnvClient[StaminaAction, StaminaObservation, StaminaState]):
    """OpenEnv's WebSocket client for a ``stamina-gym serve`` server."""

    def _step_payload(self, action: StaminaAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[StaminaObservation]:
        observation = StaminaObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                         done=payload.get("done", False))  # fmt: skip
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> StaminaState:
        return StaminaState(**payload)
