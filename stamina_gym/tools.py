"""The agent's tools. An action is a JSON object (text or dict) ``{"tool": NAME, ...args}``.

Each tool returns the text the agent sees next, or raises ``ToolError`` whose message the
agent sees instead. File tools run in the env's process on paths ``Workspace.resolve``
has checked; anything that executes agent-controlled code or patterns (``run``,
``run_tests``, ``search``) runs in the sandbox. File tools open regular files only
(``stamina_gym.safetree``): a named pipe, socket or device is listed, never read or
written, and an OS error on a path becomes a ``ToolError``.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from stamina_gym import agent_runner, pyast, safetree
from stamina_gym.action_text import EXAMPLES, NoAction, extract_action
from stamina_gym.errors import ToolError
from stamina_gym.sandbox import (
    PYTEST_ENVIRONMENT,
    REPO_MOUNT,
    Mount,
    RunResult,
    Sandbox,
)
from stamina_gym.workspace import Workspace

_MAX_READ_FILE_BYTES = 2 * 1024 * 1024
_MAX_MATCHES = 200
_PYTEST_TIME = re.compile(r" in \d+(?:\.\d+)?s(?: \([0-9:.]+\))?")


@dataclass
class ToolContext:
    workspace: Workspace
    sandbox: Sandbox
    timeout_s: float = 60.0
    """Longest a ``run`` command may take; an agent may ask for less, never more."""
    dialogue: Any = None
    """The turn's ``stamina_gym.user.dialogue.Dialogue``: the user ``ask`` and ``plan`` talk to."""

    def mounts(self) -> list[Mount]:
        return [Mount(self.workspace.path, REPO_MOUNT, writable=True)]


@dataclass(frozen=True)
class Param:
    type: type | tuple[type, ...]
    required: bool = False
    doc: str = ""
    schema: dict | None = None
    """JSON schema of the value when its Python type alone says too little (a list of objects)."""


@dataclass(frozen=True)
class Tool:
    name: str
    doc: str
    params: dict[str, Param]
    fn: Callable[..., str] | None
    """None for tools the env itself handles (``submit``)."""
    changes_files: bool = False


_SPECIAL_NAMES = {"fifo": "named pipe", "socket": "socket", "device": "device"}
_NEEDS_QUOTES = re.compile(r'[\x00-\x1f\x7f"\\\udc80-\udcff]')


def _shown(rel: str) -> str:
    """A path as one unambiguous line: quoted with C escapes, as git shows it, when it
    holds a control character, a quote, a backslash or a byte that is not UTF-8."""
    if not _NEEDS_QUOTES.search(rel):
        return rel
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}

    def escape(match: re.Match) -> str:
        char = match.group()
        if char in escapes:
            return escapes[char]
        code = ord(char)
        return f"\\x{code - 0xDC00 if code >= 0xDC80 else code:02x}"

    return '"' + _NEEDS_QUOTES.sub(escape, rel) + '"'


def _os_errors_as_tool_errors(fn: Callable[..., str]) -> Callable[..., str]:
    """An OSError on a path the agent named (a loop, a pipe, a folder where a file was
    expected) is the agent's to see, not a crash."""

    @functools.wraps(fn)
    def wrapper(ctx: ToolContext, *args: Any, **kwargs: Any) -> str:
        try:
            return fn(ctx, *args, **kwargs)
        except OSError as exc:
            where = exc.filename
            if isinstance(where, str) and where.startswith(str(ctx.workspace.path)):
                where = ctx.workspace.relative(Path(where)) or "."
            raise ToolError(f"{where}: {exc.strerror or exc}" if where else str(exc)) from None

    return wrapper


def _text_of(ctx: ToolContext, name: str) -> str:
    path = ctx.workspace.resolve(name)
    try:
        info = path.stat()
    except OSError:
        raise ToolError(f"{name}: no such file") from None
    if not stat.S_ISREG(info.st_mode):
        what = "a directory" if stat.S_ISDIR(info.st_mode) else f"a {_SPECIAL_NAMES[safetree.kind_of(info.st_mode)]}"
        raise ToolError(f"{name}: not a regular file ({what}); nothing was read")
    if info.st_size > _MAX_READ_FILE_BYTES:
        raise ToolError(f"{name}: larger than {_MAX_READ_FILE_BYTES} bytes; read it with run (head, sed)")
    return safetree.read_bytes(path, follow_symlinks=True, limit=_MAX_READ_FILE_BYTES).decode("utf-8", "replace")


@_os_errors_as_tool_errors
def list_files(ctx: ToolContext, path: str = ".") -> str:
    top = ctx.workspace.resolve(path)
    if not top.is_dir():
        raise ToolError(f"{path}: not a directory")
    listing = ctx.workspace.listing(top, special=True)
    lines = [f"error: {listing.over} (the list stops there)"] if listing.over else []
    prefix = "" if top == ctx.workspace.path else ctx.workspace.relative(top) + "/"
    for entry in listing.entries:
        rel, kind = _shown(prefix + entry.rel), entry.kind
        if kind == "symlink":
            lines.append(f"{rel} -> symlink")
        elif kind in safetree.SPECIAL:
            lines.append(f"{rel} ({_SPECIAL_NAMES[kind]}, not read)")
        elif kind == "file" and entry.stat.st_size > _MAX_READ_FILE_BYTES:
            lines.append(f"{rel} ({entry.stat.st_size} bytes)")
        elif kind == "file":
            lines.append(f"{rel} ({ctx.workspace.line_count(entry)} lines)")
    return "\n".join(lines) or "(no files)"


@_os_errors_as_tool_errors
def read_file(ctx: ToolContext, path: str, start: int = 1, end: int | None = None) -> str:
    lines = _text_of(ctx, path).splitlines()
    if start < 1 or (end is not None and end < start):
        raise ToolError(f"bad line range {start}..{end}: lines are numbered from 1 and end >= start")
    chosen = lines[start - 1 : end]
    width = len(str(start + len(chosen)))
    body = "\n".join(f"{n:>{width}}| {line}" for n, line in enumerate(chosen, start))
    return f"{path}: lines {start}-{start + len(chosen) - 1} of {len(lines)}\n{body}"


@_os_errors_as_tool_errors
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    target = ctx.workspace.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path}: is a directory")
    if target.exists() and not target.is_file():
        raise ToolError(f"{path}: not a regular file; delete it first to write a file there")
    created = [p for p in reversed(target.parents) if not p.exists()]
    safetree.make_folders(target.parent)
    # O_NONBLOCK: should a pipe appear there after all, the open fails instead of waiting.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{path}: not a regular file")
        handle.write(content.encode("utf-8", "replace"))  # a lone surrogate from JSON becomes "?"
    ctx.sandbox.prepare(created[0] if created else target)  # the one new subtree, walked once
    return f"wrote {path} ({len(content.splitlines())} lines)"


@_os_errors_as_tool_errors
def delete_file(ctx: ToolContext, path: str) -> str:
    target = ctx.workspace.resolve(path)
    if target == ctx.workspace.path:
        raise ToolError("refusing to delete the repository root")
    try:
        info = target.lstat()
    except OSError:
        info = None
    if info is None or stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path}: no such file (delete_file removes files, not folders)")
    target.unlink()
    return f"deleted {path}"


@_os_errors_as_tool_errors
def apply_patch(ctx: ToolContext, patch: str) -> str:
    root = ctx.workspace.path
    before = {name: [p for p in reversed(root.joinpath(name).parents) if root in p.parents and not p.exists()]
              for name in ctx.workspace.patch_paths(patch)}  # fmt: skip
    touched = ctx.workspace.apply_patch(patch)
    # Only what the patch made is handed to the sandbox's user: a walk of the whole tree
    # would meet whatever else the agent built there.
    # Each new subtree is walked once, from its top: a folder's walk covers what is below it.
    for made in _tops({p for name in touched for p in [*before.get(name, []), root.joinpath(name)]}):
        if made.exists() or made.is_symlink():
            ctx.sandbox.prepare(made)
    return "applied patch to " + ", ".join(touched)


#: Wall-clock limit of one ``search``.
SEARCH_TIMEOUT_S = 20.0


def _tops(paths: set[Path]) -> list[Path]:
    """The paths of ``paths`` that have no ancestor in it, sorted. In the order of their
    parts a path's descendants follow it directly, so one pass finds them."""
    tops: list[Path] = []
    for path in sorted(paths, key=lambda p: p.parts):
        if not tops or path.parts[: len(tops[-1].parts)] != tops[-1].parts:
            tops.append(path)
    return tops


def search(ctx: ToolContext, pattern: str, path: str = ".") -> str:
    ctx.workspace.resolve(path)
    # -D skip: a named pipe, socket or device is never read, even when named as ``path``.
    argv = ["grep", "-rnIP", "-D", "skip", "--exclude-dir=__pycache__", "--exclude-dir=.git", "-m", str(_MAX_MATCHES),
            "--", pattern, path]  # fmt: skip
    result = ctx.sandbox.run(argv, mounts=ctx.mounts(), timeout=SEARCH_TIMEOUT_S)
    if result.exit_code == 1 and not result.output:
        return "no matches"
    if result.exit_code not in (0, 1):
        raise ToolError(f"search failed: {result.output.strip()[:500]}")
    lines = sorted(result.output.splitlines())
    return "\n".join(lines[:_MAX_MATCHES])


def find_references(ctx: ToolContext, symbol: str) -> str:
    if not symbol.isidentifier():
        raise ToolError(f"{symbol!r} is not a Python identifier")
    hits = []
    listing = ctx.workspace.listing()
    for entry in listing.entries:
        if entry.kind != "file" or not entry.rel.endswith(".py") or entry.stat.st_size > _MAX_READ_FILE_BYTES:
            continue
        try:
            tree = pyast.parse(safetree.read_bytes(entry.path), filename=entry.rel)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        rel = _shown(entry.rel)
        hits += [f"{rel}:{line}: {kind}" for line, kind in _symbol_uses(tree, symbol)]
    found = "\n".join(hits[:_MAX_MATCHES]) or f"no references to {symbol}"
    return f"error: {listing.over} (the files past it were not searched)\n{found}" if listing.over else found


def _symbol_uses(tree: ast.AST, symbol: str) -> list[tuple[int, str]]:
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == symbol:
            uses.append((node.lineno, "definition"))
        elif isinstance(node, ast.Name) and node.id == symbol:
            uses.append((node.lineno, "assignment" if isinstance(node.ctx, ast.Store) else "use"))
        elif isinstance(node, ast.Attribute) and node.attr == symbol:
            uses.append((node.lineno, "attribute"))
        elif isinstance(node, ast.alias) and symbol in (node.name.split(".")[-1], node.asname):
            uses.append((node.lineno, "import"))
        elif isinstance(node, ast.arg) and node.arg == symbol:
            uses.append((node.lineno, "parameter"))
    return sorted(set(uses))


def _format_run(result: RunResult) -> str:
    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    if result.limit:
        status += f" ({result.limit} limit hit)"
    return f"[{status}]\n{result.output}"


def run(ctx: ToolContext, command: str, timeout: float | None = None) -> str:
    if timeout is not None and timeout <= 0:
        raise ToolError("timeout must be positive")
    limit = min(timeout, ctx.timeout_s) if timeout else ctx.timeout_s
    argv, mounts = ["bash", "-c", command], ctx.mounts()
    result = agent_runner.run_command(ctx.sandbox, mounts, argv, limit)
    if result is None:  # no warm runner in this sandbox: a cold start
        result = ctx.sandbox.run(argv, mounts=mounts, timeout=limit)
    return _format_run(result)


def run_tests(ctx: ToolContext, args: list | None = None) -> str:
    args = ["-q", "-p", "no:cacheprovider", "--color=no", *(str(a) for a in (args or []))]
    result = agent_runner.run_tests(ctx.sandbox, ctx.mounts(), args, ctx.timeout_s)
    if result is None:  # no warm runner in this sandbox: a cold interpreter
        argv = [ctx.sandbox.python, "-m", "pytest", *args]
        result = ctx.sandbox.run(argv, mounts=ctx.mounts(), timeout=ctx.timeout_s, env=PYTEST_ENVIRONMENT)
    # Durations are dropped so that the same code gives the same observation.
    return _PYTEST_TIME.sub("", _format_run(result))


def _dialogue(ctx: ToolContext, tool: str):
    if ctx.dialogue is None:
        raise ToolError(f"{tool}: there is no user to talk to outside an episode")
    return ctx.dialogue


def ask(ctx: ToolContext, question: str) -> str:
    return _dialogue(ctx, "ask").ask(question)


def plan(ctx: ToolContext, steps: list) -> str:
    return _dialogue(ctx, "plan").submit_plan(steps)


def summarize(ctx: ToolContext, requirements: dict) -> str:
    return _dialogue(ctx, "summarize").summarize(requirements)


_PLAN_STEPS = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "details": {"type": "string"},
                    "depends_on": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["description"],
            },
        ]
    },
}

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        Tool("list_files", "List files under a folder with their line counts.",
             {"path": Param(str, doc="folder, default the repository root")}, list_files),
        Tool("read_file", "Read a file with line numbers, optionally lines start..end (1-based, inclusive).",
             {"path": Param(str, True), "start": Param(int), "end": Param(int)}, read_file),
        Tool("search", "Search file contents with a Perl-compatible regex; prints path:line:text.",
             {"pattern": Param(str, True), "path": Param(str, doc="folder or file to search")}, search),
        Tool("find_references", "Find definitions, uses, attributes, imports and parameters of a Python name.",
             {"symbol": Param(str, True)}, find_references),
        Tool("write_file", "Create or overwrite a file with the given text.",
             {"path": Param(str, True), "content": Param(str, True)}, write_file, changes_files=True),
        Tool("apply_patch", "Apply a unified diff (paths relative to the repository root, a/ b/ prefixes allowed).",
             {"patch": Param(str, True)}, apply_patch, changes_files=True),
        Tool("delete_file", "Delete a file.", {"path": Param(str, True)}, delete_file, changes_files=True),
        Tool("run", "Run a bash command in the sandbox (cwd /repo, no network); prints exit code and output.",
             {"command": Param(str, True), "timeout": Param((int, float), doc="seconds, capped by the sandbox")},
             run, changes_files=True),
        Tool("run_tests", "Run the repository's own tests with pytest; args are passed to pytest.",
             {"args": Param(list, doc="extra pytest arguments, e.g. [\"tests/test_api.py\", \"-x\"]")},
             run_tests, changes_files=True),
        Tool("ask", "Ask the user one question about the request; the answer comes back. Ask before you code.",
             {"question": Param(str, True)}, ask),
        Tool("plan", "Submit your plan: ordered steps, each a string or {description, details?, depends_on?: [earlier step numbers]}.",
             {"steps": Param(list, True, schema=_PLAN_STEPS)}, plan),
        Tool("summarize", "State the clarified requirements as an object (requirement -> value); closes the questions.",
             {"requirements": Param(dict, True)}, summarize),
        Tool("submit", "Finish the turn: the work is graded and the next request arrives.", {}, None),
    ]
}  # fmt: skip


#: The longest action, in characters (the action space's ``max_length``); a dict action
#: counts the characters of its strings.
MAX_ACTION_CHARS = 500_000


def _size(value: Any) -> int:
    """Characters in the strings of a decoded action (keys included); a loop, so no
    nesting depth raises."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple)):
            stack += item
    return total


def parse_action(action: Any, action_format: str = "json") -> tuple[Tool, dict[str, Any]]:
    """Validate an action; raises ToolError with a message fit to show the agent. Text
    is one JSON object (``action_format="json"``), or, ``"tolerant"``, a tool call as chat
    models write it (``stamina_gym.action_text``)."""
    if isinstance(action, (bytes, bytearray)):
        action = action.decode("utf-8", "replace")
    size = len(action) if isinstance(action, str) else _size(action)
    if size > MAX_ACTION_CHARS:
        raise ToolError(f"the action holds {size:,} characters, past the limit of {MAX_ACTION_CHARS:,}; "
                        "write a large file in parts (write_file, then apply_patch)")  # fmt: skip
    if isinstance(action, str):
        text = action
        try:
            action = json.loads(text)
        except RecursionError:
            raise ToolError(f"the action nests too deeply to be read as JSON; {_USAGE}") from None
        except json.JSONDecodeError as exc:
            if action_format != "tolerant":
                raise ToolError(f"the action is not valid JSON ({exc.msg} at char {exc.pos}); {_USAGE}; {_TOLERANT_HINT}") from None
            action = None
        if action_format == "tolerant" and not (isinstance(action, dict) and "tool" in action):
            try:
                action = extract_action(text)
            except NoAction as exc:
                raise ToolError(f"no tool call found: {exc}; write {EXAMPLES['tolerant']}") from None
    if not isinstance(action, dict):
        raise ToolError(f"the action must be a JSON object; {_USAGE}")
    name = action.get("tool")
    if not isinstance(name, str) or name not in TOOLS:
        close = difflib.get_close_matches(str(name), TOOLS, n=1)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise ToolError(f"unknown tool {name!r};{hint} tools: {', '.join(TOOLS)}")
    tool = TOOLS[name]
    args = _from_strict({k: v for k, v in action.items() if k != "tool"}, tool)
    unknown = sorted(set(args) - set(tool.params))
    if unknown:
        raise ToolError(f"{name}: unknown argument(s) {', '.join(unknown)}; it takes {', '.join(tool.params) or 'none'}")
    for key, param in tool.params.items():
        if key not in args:
            if param.required:
                raise ToolError(f"{name}: missing required argument {key!r}")
            continue
        value = args[key]
        if isinstance(value, bool) or not isinstance(value, param.type):
            expected = param.type.__name__ if isinstance(param.type, type) else "number"
            raise ToolError(f"{name}: argument {key!r} must be {expected}, got {type(value).__name__}")
    return tool, args


_USAGE = 'write for example {"tool": "read_file", "path": "README.md"}'
_TOLERANT_HINT = "(an env made with action_format='tolerant' also reads prose, ```json blocks and <tool_call> tags)"


_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    (int, float): {"type": "number"},
    bool: {"type": "boolean"},
    list: {"type": "array", "items": {"type": "string"}},
    dict: {"type": "object", "additionalProperties": {"type": "string"}},
}


def openai_tools(strict: bool = False) -> list[dict[str, Any]]:
    """Every tool as an OpenAI function-tool schema (chat-completions ``tools``). With
    ``strict``, schemas for OpenAI's strict mode (``"strict": true``): every property is
    required, an optional one may be null (null means absent), every object closes its
    properties, and a free-form map (``summarize``'s requirements) is a list of
    ``{"key", "value"}`` pairs; ``parse_action`` reads both forms."""
    schema = []
    for tool in TOOLS.values():
        properties = {}
        for name, param in tool.params.items():
            if param.schema is None and param.type not in _JSON_TYPES:
                raise TypeError(f"tool {tool.name}: no JSON schema type for parameter {name} of type {param.type}")
            properties[name] = {**(param.schema or _JSON_TYPES[param.type]), **({"description": param.doc} if param.doc else {})}
        parameters = {
            "type": "object",
            "properties": properties,
            "required": [name for name, param in tool.params.items() if param.required],
            "additionalProperties": False,
        }
        function = {"name": tool.name, "description": tool.doc, "parameters": _strict(parameters) if strict else parameters}
        schema.append({"type": "function", "function": {**function, **({"strict": True} if strict else {})}})
    return schema


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the form OpenAI's strict mode accepts (see ``openai_tools``)."""
    schema = dict(schema)
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        pair = {"key": {"type": "string"}, "value": _strict(schema["additionalProperties"])}
        return {"type": "array", "items": {"type": "object", "properties": pair, "required": ["key", "value"],
                                           "additionalProperties": False},
                **({"description": schema["description"]} if "description" in schema else {})}  # fmt: skip
    if "properties" in schema:
        required = set(schema.get("required", ()))
        schema["properties"] = {
            name: _strict(sub) if name in required else _nullable(_strict(sub)) for name, sub in schema["properties"].items()
        }
        schema["required"] = list(schema["properties"])
        schema["additionalProperties"] = False
    if "items" in schema:
        schema["items"] = _strict(schema["items"])
    if "anyOf" in schema:
        schema["anyOf"] = [_strict(option) for option in schema["anyOf"]]
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _from_strict(args: dict[str, Any], tool: Tool) -> dict[str, Any]:
    """Arguments as strict-mode schemas send them, in the plain form: a null is an absent
    argument (in a plan step's object too), a list of key/value pairs for a map is the map."""
    out = {}
    for key, value in args.items():
        if value is None:
            continue
        param = tool.params.get(key)
        if param is not None and param.type is dict and isinstance(value, list) and all(
                isinstance(v, dict) and set(v) == {"key", "value"} for v in value):  # fmt: skip
            value = {v["key"]: v["value"] for v in value}
        elif isinstance(value, list):
            value = [{k: v for k, v in item.items() if v is not None} if isinstance(item, dict) else item for item in value]
        out[key] = value
    return out


def describe_tools() -> str:
    """The action documentation, generated from the tool table."""
    lines = []
    for tool in TOOLS.values():
        params = ", ".join(f"{k}{'' if p.required else '?'}" for k, p in tool.params.items())
        lines.append(f"- {tool.name}({params}): {tool.doc}")
    return "\n".join(lines)
