"""The docker sandbox: the agent's commands and the hidden tests run in locked-down
containers of the image built by ``stamina-gym docker-build`` (``sandbox/image.py``).

Long-lived containers per env, each started on first use:

* ``work`` runs cold commands (``run``: a bug report's reproduction script, the agent's
  commands where the warm runner is off). The env's work tree is bind-mounted at
  ``/repo``; the env resets it with git on the host, so a new episode costs no new
  container.
* ``tests`` holds the warm runner of the agent's commands and tests (``agent_runner.py``):
  the same binds as ``work``, apart so that the sweep after each cold command leaves it
  running.
* ``grade`` runs the hidden tests. Grading trees (``Mount.ephemeral``) are copied in as
  tar archives onto in-memory volumes, writable ones are copied back out the same way,
  and everything is wiped after the run. No host path is mounted into it, and it never
  sees the work tree.

The hidden tests therefore never enter the container the agent's commands run in, and
nothing the graded code writes (to ``/tmp``, ``/repo`` or anywhere) can reach it.

Every container: no network, read-only root, an in-memory ``/tmp``, memory, CPU and
process (pids) limits, every capability dropped, ``no-new-privileges``, and a non-root
user: the container's own process runs as a keeper uid and each command as the sandbox
uid, so a command cannot kill the container. Each command runs under ``timeout -s KILL``
with rlimits on CPU time, file size and address space; when it ends (or when the host's
own deadline passes first) every process of the sandbox uid is killed and ``/tmp`` is
emptied (with ``/dev/shm`` and the IPC objects of the uid), so no process outlives its
command and nothing it made outlives it outside ``/repo``.

Containers carry ``org.stamina-gym.*`` labels naming the process that owns them. They are
removed on ``close``, when the sandbox is garbage-collected or the interpreter exits, by
the next sandbox that starts (for owners that are gone) and by ``stamina-gym docker-clean``.
"""

from __future__ import annotations

import logging
import os
import secrets
import select
import shutil
import socket
import struct
import tarfile
import tempfile
import time
import weakref
from dataclasses import dataclass
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Iterator, Mapping, Sequence

from stamina_gym import safetree
from stamina_gym.config import SandboxConfig
from stamina_gym.errors import SandboxError
from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, command_environment
from stamina_gym.sandbox.disk import POLL_S, DiskWatch, watch_for
from stamina_gym.sandbox.image import BUILD_COMMAND, image_tag, recipe
from stamina_gym.sandbox.output import Capture
from stamina_gym.sandbox.service import LineService
from stamina_gym.sandbox.users import UserLease

log = logging.getLogger(__name__)

LABEL = "org.stamina-gym.managed"
LABEL_ROLE = "org.stamina-gym.role"
LABEL_OWNER = "org.stamina-gym.owner"
"""``<boot id>:<pid>:<process start time>`` of the process that started the container."""

#: The inner ``timeout`` fires this long after the host's deadline: the host kills first.
INNER_GRACE_S = 2.0
#: How long after a kill the command's output stream may take to close.
KILL_GRACE_S = 10.0
#: Seconds allowed to housekeeping commands (kill, wipe).
HOUSEKEEPING_S = 30.0

# $1 cpu seconds, $2 file size KiB, $3 address space KiB, $4 seconds, then the argv.
_WRAPPER = r"""
exec 2>&1
ulimit -c 0 -t "$1" -f "$2" -v "$3" || exit 125
limit=$4
shift 4
timeout -s KILL "$limit" "$@"
status=$?
kill -KILL -1 2>/dev/null
ipcrm --all 2>/dev/null
shopt -s dotglob nullglob
scratch=(/tmp/* /dev/shm/* /dev/mqueue/*)
if ((${#scratch[@]})); then chmod -R u+rwX "${scratch[@]}" 2>/dev/null; rm -rf "${scratch[@]}" 2>/dev/null; fi
exit "$status"
"""


_PYTHON_VERSIONS: dict[str, str] = {}
"""Image id -> the version of its Python."""


def _docker():
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        raise SandboxError(f"the docker SDK for Python is not installed ({exc}): pip install docker") from None
    return docker


def connect():
    """A docker client whose engine answers, or SandboxError saying why not."""
    docker = _docker()
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxError(f"sandbox.kind=docker but no Docker engine answers: {exc}") from None
    return client


def engine_problem() -> str | None:
    """None when a Docker engine answers here, else why not (for skips and messages)."""
    try:
        connect().close()
    except SandboxError as exc:
        return str(exc)
    return None


class DockerSandbox:
    """See the module docstring. ``hidden`` is accepted for the protocol and unused: a
    container sees only what is mounted into it."""

    isolation = "docker"
    python = "/usr/bin/python3"

    def __init__(self, config: SandboxConfig, *, hidden: Sequence[Path] = ()) -> None:
        self.config = config
        self.image = config.docker_image or image_tag(recipe(config.docker_debian))
        self._client = connect()
        docker = _docker()
        try:
            self._image_id = self._client.images.get(self.image).id
        except docker.errors.ImageNotFound:
            self._client.close()
            build = BUILD_COMMAND if config.docker_debian == "bookworm" else f"stamina-gym docker-build --debian {config.docker_debian}"
            raise SandboxError(f"the docker sandbox image {self.image} is missing: build it with {build}") from None
        except docker.errors.DockerException as exc:
            self._client.close()
            raise SandboxError(f"could not look up the image {self.image}: {exc}") from None
        # a uid of this sandbox's own (stamina_gym.sandbox.users): processes in containers
        # count against the host's RLIMIT_NPROC of their uid like any others
        self._lease = UserLease(config.user, config.users) if os.geteuid() == 0 else None
        self.keeper = 65533 if self.uid != 65533 else 65532
        self._work: _Container | None = None
        self._grade: _Container | None = None
        self._tests: _Container | None = None
        self._ids: list[str] = []
        self._services: list[LineService] = []
        self._pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="stamina-gym-docker")
        self._finalizer = weakref.finalize(self, _remove_quietly, self._client, self._ids)

    # -- public -------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        cwd: str = REPO_MOUNT,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        max_output_chars: int | None = None,
    ) -> RunResult:
        timeout = self.config.timeout_s if timeout is None else timeout
        limit = self.config.max_output_chars if max_output_chars is None else max_output_chars
        environment = command_environment(env)
        cfg = self.config
        wrapped = [
            "bash", "-c", _WRAPPER, "stamina-gym",
            str(cfg.cpu_s), str(cfg.file_size_mb * 1024), str(cfg.memory_mb * 1024), f"{timeout + INNER_GRACE_S:g}",
            *argv,
        ]  # fmt: skip
        ephemeral = [m for m in mounts if m.ephemeral]
        if ephemeral and len(ephemeral) != len(mounts):
            raise SandboxError("a docker run cannot mix ephemeral mounts with bound ones")
        if not ephemeral:
            container = self._work_container(mounts)
            watch = watch_for([m.source for m in mounts if m.writable], self.config)
            return self._exec(container, wrapped, cwd, environment, timeout, limit, watch)
        too_big = self._too_big(ephemeral)
        if too_big is not None:
            return too_big
        container = self._grade_container(ephemeral)
        try:
            self._copy_in(container, ephemeral)
            result = self._exec(container, wrapped, cwd, environment, timeout, limit)
            self._copy_out(container, ephemeral)
            self._wipe(container, ephemeral)
        except BaseException:
            self._discard("grade")  # a half-done grading run never leaves files behind
            raise
        return result

    def _too_big(self, mounts: Sequence[Mount]) -> RunResult | None:
        """The agent's files do not fit the sandbox: its fault, not an infrastructure fault."""
        too_big = [m for m in mounts if _tree_bytes(Path(m.source)) > self.config.tmp_mb * 2**20]
        if not too_big:
            return None
        names = ", ".join(m.target for m in too_big)
        message = f"[stamina-gym: {names} holds more than sandbox.tmp_mb ({self.config.tmp_mb} MiB); nothing was run]"
        return RunResult(exit_code=1, output=message, output_bytes=len(message.encode()), limit="file_size")

    def prepare(self, path: Path) -> None:
        """Hand a tree the env wrote (as root) to the sandbox uid, as the local sandbox does."""
        if os.geteuid() != 0:
            return
        os.lchown(path, self.uid, self.uid)
        for entry in safetree.walk(path, special=True):
            os.lchown(entry.path, self.uid, self.uid)

    def serve(
        self, argv: Sequence[str], *, mounts: Sequence[Mount], prefix: str, cwd: str = REPO_MOUNT,
        env: Mapping[str, str] | None = None,
    ) -> LineService:  # fmt: skip
        """Start ``argv`` as a long-lived service, as the main process of an exec (so its
        parent is outside the container), under the same rlimits as ``run`` but CPU time
        (it sets that for the children it starts). With grading trees (ephemeral mounts)
        it runs in the grade container: before each request the trees are copied in, after
        it they are wiped, nothing is copied back out. With bound folders it runs in the
        tests container, which sees them as ``run`` does in the work container (whose
        sweep after each command would end a service there)."""
        ephemeral = [m for m in mounts if m.ephemeral]
        if ephemeral and len(ephemeral) != len(mounts):
            raise SandboxError("a docker service cannot mix ephemeral mounts with bound ones")
        docker = _docker()
        cfg = self.config
        if ephemeral:
            container = self._grade_container(mounts)
            self._copy_in(container, mounts)
        else:
            container = self._work_container(mounts, role="tests")
        script = 'ulimit -c 0 -f "$1" -v "$2" || exit 125; shift 2; exec "$@"'
        wrapped = ["bash", "-c", script, "stamina-gym", str(cfg.file_size_mb * 1024), str(cfg.memory_mb * 1024), *argv]
        api = self._client.api
        try:
            exec_id = api.exec_create(container.id, wrapped, stdin=True, stdout=True, stderr=True,
                                      user=f"{self.uid}:{self.uid}", workdir=cwd, environment=command_environment(env))["Id"]  # fmt: skip
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker exec in {container.id[:12]} failed: {exc}") from None
        raw = getattr(sock, "_sock", sock)
        frames = _Frames()

        def read() -> bytes:
            while True:
                data = raw.recv(65536)
                if not data:
                    return b""
                payload = b"".join(frames.feed(data))
                if payload:
                    return payload

        def kill() -> None:
            try:
                self._kill_all(container, wait=True)
            finally:
                _close_stream(sock)

        def exit_code() -> int | None:
            try:
                state = api.exec_inspect(exec_id)
            except docker.errors.DockerException:
                return None
            return None if state["Running"] else state["ExitCode"]

        def before() -> RunResult | None:
            too_big = self._too_big(mounts)
            if too_big is None:
                self._await_wipe(container)
                self._copy_in(container, mounts)
            return too_big

        hooks = {"before": before, "after": lambda: self._wipe(container, mounts)} if ephemeral else {}
        bound = [m.source for m in mounts if m.writable and not m.ephemeral]  # host folders it writes through
        service = LineService(write=raw.sendall, read=read, fileno=raw.fileno(), prefix=prefix, kill=kill,
                              exit_code=exit_code, disk=lambda: watch_for(bound, self.config), **hooks)  # fmt: skip
        self._services.append(service)
        return service.start(cfg.timeout_s)

    def python_version(self) -> str:
        if self._image_id not in _PYTHON_VERSIONS:
            argv = [self.python, "-c", "import platform; print(platform.python_version())"]
            try:
                out = self._client.containers.run(self.image, argv, remove=True, network_mode="none", user=str(self.uid))
            except _docker().errors.DockerException as exc:
                raise SandboxError(f"could not read the Python version of {self.image}: {exc}") from None
            _PYTHON_VERSIONS[self._image_id] = out.decode().strip()
        return _PYTHON_VERSIONS[self._image_id]

    @property
    def uid(self) -> int:
        """The uid the agent's code runs as: this sandbox's lease (taken again if ``close``
        gave it back), or this process's own when it is not root."""
        if self._lease is None:
            return os.getuid()
        if not self._lease.held:
            self._lease = UserLease(self.config.user, self.config.users)
        return self._lease.uid

    def close(self) -> None:
        """Remove this env's containers (and their volumes), and give the uid back."""
        for service in self._services:
            try:
                service.close()
            except SandboxError:
                pass
        self._services.clear()
        self._pool.shutdown(wait=True)
        self._finalizer()
        self._work = self._grade = self._tests = None
        self._client.close()
        if self._lease is not None:
            self._lease.release()

    def container_ids(self) -> dict[str, str]:
        """Role -> id of the containers running now (for tests and diagnostics)."""
        roles = (("work", self._work), ("grade", self._grade), ("tests", self._tests))
        return {role: c.id for role, c in roles if c is not None}

    # -- containers ---------------------------------------------------------------------

    def _work_container(self, mounts: Sequence[Mount], role: str = "work") -> "_Container":
        """The container of ``role`` (``work``, or ``tests`` for a service beside it, which
        the per-command sweep of the work container must not reach) with host folders bound."""
        binds = {(str(m.source), m.target, m.writable) for m in mounts}
        current = getattr(self, f"_{role}")
        if current is not None and binds <= current.layout:
            return current
        self._discard(role)
        docker = _docker()
        specs = [docker.types.Mount(t, s, type="bind", read_only=not w) for s, t, w in sorted(binds)]
        container = self._start(role, specs, frozenset(binds))
        setattr(self, f"_{role}", container)
        return container

    def _grade_container(self, mounts: Sequence[Mount]) -> "_Container":
        layout = frozenset((m.target, m.writable) for m in mounts)
        if self._grade is not None and self._grade.layout == layout:
            return self._grade
        self._discard("grade")
        docker = _docker()
        specs = []
        for target, writable in sorted(layout):
            owner = self.uid if writable else self.keeper
            options = f"size={self.config.tmp_mb}m,uid={owner},gid={owner},mode=0755,nosuid,nodev"
            driver = docker.types.DriverConfig("local", {"type": "tmpfs", "device": "tmpfs", "o": options})
            specs.append(docker.types.Mount(target, None, type="volume", driver_config=driver))
        self._grade = self._start("grade", specs, layout)
        return self._grade

    def _start(self, role: str, mounts: list, layout: frozenset) -> "_Container":
        docker = _docker()
        cfg = self.config
        sweep_stale(self._client)
        memory = f"{cfg.memory_mb + cfg.tmp_mb}m"
        try:
            container = self._client.containers.run(
                self.image,
                ["sleep", "infinity"],
                name=f"stamina-gym-{role}-{secrets.token_hex(4)}",
                detach=True,
                init=True,
                user=f"{self.keeper}:{self.keeper}",
                working_dir="/",
                hostname="sandbox",
                environment={},
                labels={LABEL: "1", LABEL_ROLE: role, LABEL_OWNER: owner_id()},
                network_mode="none",
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={cfg.tmp_mb}m,mode=1777"},
                mounts=mounts,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                mem_limit=memory,
                memswap_limit=memory,
                pids_limit=cfg.max_processes + 4,
                nano_cpus=int(cfg.cpus * 1e9),
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not start the {role} container from {self.image}: {exc}") from None
        self._ids.append(container.id)
        log.info("started docker sandbox container %s (%s)", container.name, role)
        return _Container(container.id, layout)

    def _discard(self, role: str) -> None:
        container = getattr(self, f"_{role}")
        if container is None:
            return
        setattr(self, f"_{role}", None)
        if container.id in self._ids:
            self._ids.remove(container.id)
        _remove_quietly(self._client, [container.id])

    # -- commands -----------------------------------------------------------------------

    def _exec(
        self, container: "_Container", argv: list[str], cwd: str, environment: dict[str, str], timeout: float, limit: int,
        watch: DiskWatch | None = None,
    ) -> RunResult:
        start = time.monotonic()
        exec_id, sock = self._exec_start(container.id, argv, str(self.uid), cwd, environment)
        capture, killed = Capture(limit), None
        deadline = start + timeout
        raw = getattr(sock, "_sock", sock)
        frames = _Frames()
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if killed is not None:
                        raise SandboxError(f"the command's output did not end {KILL_GRACE_S:g}s after it was killed")
                    killed = "timeout"
                    self._kill_all(container)
                    deadline = time.monotonic() + KILL_GRACE_S
                    continue
                if watch is not None and killed is None and (written := watch.exceeded()):
                    killed = f"disk {written}"
                    self._kill_all(container)
                    deadline = time.monotonic() + KILL_GRACE_S
                    continue
                ready, _, _ = select.select([raw], [], [], min(remaining, POLL_S) if watch is not None else remaining)
                if not ready:
                    continue
                data = raw.recv(65536)
                if not data:
                    break
                for payload in frames.feed(data):
                    if capture.feed(payload) and killed is None:
                        killed = "output"
                        self._kill_all(container)
                        deadline = time.monotonic() + KILL_GRACE_S
        finally:
            _close_stream(sock)
        code = self._exit_code(exec_id)
        return capture.result(code, killed, time.monotonic() - start)

    def _exec_start(self, container_id: str, argv: list[str], user: str, cwd: str, environment: dict[str, str]):
        docker = _docker()
        api = self._client.api
        try:
            exec_id = api.exec_create(
                container_id, argv, stdout=True, stderr=True, user=f"{user}:{user}", workdir=cwd, environment=environment
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker exec in {container_id[:12]} failed: {exc}") from None
        return exec_id, sock

    def _exit_code(self, exec_id: str) -> int:
        docker = _docker()
        give_up = time.monotonic() + KILL_GRACE_S
        while True:
            try:
                state = self._client.api.exec_inspect(exec_id)
            except docker.errors.DockerException as exc:
                raise SandboxError(f"could not read the exit code of a docker exec: {exc}") from None
            if not state["Running"] and state["ExitCode"] is not None:
                return int(state["ExitCode"])
            if time.monotonic() > give_up:
                raise SandboxError("a docker exec closed its output but never reported an exit code")
            time.sleep(0.005)

    def _housekeeping(self, container: "_Container", user: int, script: str) -> None:
        _, sock = self._exec_start(container.id, ["bash", "-c", script], str(user), "/", {"PATH": "/usr/bin:/bin"})
        raw = getattr(sock, "_sock", sock)
        deadline = time.monotonic() + HOUSEKEEPING_S
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([raw], [], [], max(deadline - time.monotonic(), 0))
                if ready and not raw.recv(65536):
                    return
            raise SandboxError(f"housekeeping in the sandbox did not finish in {HOUSEKEEPING_S:g}s: {script!r}")
        finally:
            _close_stream(sock)

    def _kill_all(self, container: "_Container", *, wait: bool = False) -> None:
        """SIGKILL every process of the sandbox uid (``kill -1`` spares the caller only).
        Detached: the caller keeps draining the killed command's output meanwhile, since
        the engine does not finish an exec whose output nobody reads. ``wait``: return once
        the kill has run (a service's end: the next service, of the same uid, starts right
        after, and a kill still on its way would take it too)."""
        docker = _docker()
        api = self._client.api
        try:
            exec_id = api.exec_create(container.id, ["bash", "-c", "kill -KILL -1"], user=f"{self.uid}:{self.uid}", workdir="/")["Id"]
            api.exec_start(exec_id, detach=True)
            deadline = time.monotonic() + KILL_GRACE_S
            while wait and api.exec_inspect(exec_id).get("Running") and time.monotonic() < deadline:
                time.sleep(0.01)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not kill the command in {container.id[:12]}: {exc}") from None

    # -- grading trees in and out -------------------------------------------------------

    def _copy_in(self, container: "_Container", mounts: Sequence[Mount]) -> None:
        """Each tree goes in as one tar, all at once; entries belong to the sandbox uid
        (writable trees) or the keeper (read-only ones)."""
        self._await_wipe(container)
        targets = [m.target for m in mounts]
        archives = []
        try:
            for mount in mounts:
                nested = [_relative(t, mount.target) for t in targets if t != mount.target and _relative(t, mount.target)]
                data = tempfile.TemporaryFile()
                archives.append(data)
                _pack(Path(mount.source), data, self.uid if mount.writable else self.keeper, writable=mount.writable, skip=nested)
                data.seek(0)
            list(self._pool.map(lambda pair: self._put(container, *pair), zip(mounts, archives)))
        finally:
            for data in archives:
                data.close()

    def _put(self, container: "_Container", mount: Mount, data) -> None:
        docker = _docker()
        try:
            self._client.api.put_archive(container.id, mount.target, data)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not copy {mount.source} into {mount.target}: {exc}") from None

    def _copy_out(self, container: "_Container", mounts: Sequence[Mount]) -> None:
        """Writable trees come back as regular files and folders only (no links, no
        special files, no paths outside), replacing what the host folder held."""
        targets = [m.target for m in mounts]
        writable = [m for m in mounts if m.writable]
        archives = list(self._pool.map(lambda mount: self._get(container, mount), writable))
        for mount, data in zip(writable, archives):
            nested = [_relative(t, mount.target) for t in targets if t != mount.target and _relative(t, mount.target)]
            with data:
                try:
                    _unpack(data, Path(mount.source), skip=nested)
                except (OSError, tarfile.TarError) as exc:
                    raise SandboxError(f"could not unpack {mount.target} from the sandbox: {exc}") from None

    def _get(self, container: "_Container", mount: Mount):
        docker = _docker()
        data = tempfile.TemporaryFile()
        try:
            stream, _ = self._client.api.get_archive(container.id, mount.target)
            for chunk in stream:
                data.write(chunk)
        except docker.errors.DockerException as exc:
            data.close()
            raise SandboxError(f"could not copy {mount.target} out of the sandbox: {exc}") from None
        data.seek(0)
        return data

    def _wipe(self, container: "_Container", mounts: Sequence[Mount]) -> None:
        """Empty every grading tree: the sandbox uid its own, the keeper the read-only ones.
        It runs in the background; the next copy-in waits for it."""

        def wipe() -> None:
            for writable, user in ((True, self.uid), (False, self.keeper)):
                paths = " ".join(_quote(m.target) for m in mounts if m.writable == writable)
                if paths:
                    # Read-only trees are read-only to their owner too until it opens them again.
                    script = f"chmod -R u+rwX {paths} 2>/dev/null; find {paths} -xdev -mindepth 1 -delete 2>/dev/null; true"
                    self._housekeeping(container, user, script)

        container.wipe = self._pool.submit(wipe)

    def _await_wipe(self, container: "_Container") -> None:
        if container.wipe is not None:
            wipe, container.wipe = container.wipe, None
            wipe.result(timeout=2 * HOUSEKEEPING_S)


class _Container:
    def __init__(self, container_id: str, layout: frozenset) -> None:
        self.id = container_id
        self.layout = layout
        self.wipe: Future | None = None
        """The background wipe of the last grading run; the next run waits for it."""


class _Frames:
    """Splits docker's multiplexed stream (8-byte header: stream, 0, 0, 0, size) into payloads."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.buffer += data
        while len(self.buffer) >= 8:
            (size,) = struct.unpack(">I", self.buffer[4:8])
            if len(self.buffer) < 8 + size:
                return
            payload = bytes(self.buffer[8 : 8 + size])
            del self.buffer[: 8 + size]
            yield payload


def _close_stream(sock) -> None:
    for thing in (getattr(sock, "_response", None), sock, getattr(sock, "_sock", None)):
        try:
            if thing is not None:
                thing.close()
        except (OSError, ValueError):
            pass


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"


def _relative(path: str, parent: str) -> str:
    """``path`` relative to ``parent`` when inside it, else empty."""
    try:
        rel = PurePosixPath(path).relative_to(parent)
    except ValueError:
        return ""
    return str(rel) if str(rel) != "." else ""


def _skipped(rel: str, skip: Sequence[str]) -> bool:
    return any(rel == s or rel.startswith(s + "/") for s in skip)


def _pack(source: Path, out, owner: int, *, writable: bool, skip: Sequence[str]) -> None:
    """Tar ``source`` with every entry owned by ``owner``. Read-only trees lose their write
    bits; set-id bits always go; links stay links; anything else is left out."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel_folder = os.path.relpath(folder, source)
        return {n for n in names if _skipped(os.path.normpath(os.path.join(rel_folder, n)), skip)}

    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in safetree.walk(source, ignore):  # iterative, links not followed, no special files
            info = tar.gettarinfo(entry.path, arcname=entry.rel)
            if not (info.isreg() or info.isdir() or info.issym()):
                continue
            info.uid = info.gid = owner
            info.uname = info.gname = ""
            info.mode &= 0o755 if writable else 0o555
            if info.isdir():
                info.mode |= 0o700 if writable else 0o500
            if info.isreg():
                with os.fdopen(safetree.open_regular(entry.path), "rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)


def _unpack(data, target: Path, *, skip: Sequence[str]) -> None:
    """Replace ``target``'s contents with the regular files and folders of a tar that
    ``get_archive`` gave (its entries start with the folder's own name)."""
    _clear(target, "", skip)
    with tarfile.open(fileobj=data, mode="r|") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts[1:]
            if not parts or any(p in ("", ".", "..") for p in parts) or PurePosixPath(member.name).is_absolute():
                continue
            rel = "/".join(parts)
            if _skipped(rel, skip):
                continue
            path = target.joinpath(*parts)
            if member.isdir():
                path.mkdir(mode=0o755, exist_ok=True)
            elif member.isreg():
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    continue
                with open(path, "wb") as handle:
                    shutil.copyfileobj(source, handle)
                path.chmod(member.mode & 0o755 | 0o600)


def _clear(folder: Path, prefix: str, skip: Sequence[str]) -> None:
    """Empty ``folder``, sparing the skipped subtrees (and descending into their parents)."""
    for child in folder.iterdir():
        rel = f"{prefix}{child.name}"
        if rel in skip:
            continue
        if any(s.startswith(rel + "/") for s in skip) and child.is_dir() and not child.is_symlink():
            _clear(child, rel + "/", skip)
        elif child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _tree_bytes(root: Path) -> int:
    return sum(entry.stat.st_size for entry in safetree.walk(root) if entry.kind == "file")


# -- ownership and cleanup ----------------------------------------------------------------


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return socket.gethostname()


def _start_time(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[19]


def owner_id(pid: int | None = None) -> str:
    """``<boot id>:<pid>:<start time>``: names one process, even after its pid is reused."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{_start_time(pid)}"


def owner_gone(owner: str) -> bool:
    """True when ``owner`` was a process of this machine's current boot that has ended.
    Containers of other machines or boots are not judged."""
    boot, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if boot != _boot_id() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


@dataclass(frozen=True)
class Managed:
    """A container stamina-gym started, as the engine's listing names it."""

    id: str
    name: str
    owner: str


def managed_containers(client, *, stale_only: bool = False) -> list[Managed]:
    """Every container stamina-gym started on this engine, or only those whose owner is
    gone. One listing call: the SDK's ``containers.list`` inspects each container after
    listing them, and fails when another env removes one in between."""
    found = [
        Managed(entry["Id"], (entry.get("Names") or ["/" + entry["Id"][:12]])[0].lstrip("/"),
                (entry.get("Labels") or {}).get(LABEL_OWNER, ""))
        for entry in client.api.containers(all=True, filters={"label": LABEL})
    ]  # fmt: skip
    if stale_only:
        found = [c for c in found if owner_gone(c.owner)]
    return found


def sweep_stale(client) -> list[str]:
    """Remove containers whose owning process has ended (a crashed or killed worker)."""
    stale = managed_containers(client, stale_only=True)
    _remove_quietly(client, [c.id for c in stale])
    return [c.name for c in stale]


def clean(*, stale_only: bool = False) -> list[str]:
    """``stamina-gym docker-clean``: remove stamina-gym's containers; returns their names."""
    client = connect()
    try:
        found = managed_containers(client, stale_only=stale_only)
        _remove_quietly(client, [c.id for c in found])
        return [c.name for c in found]
    finally:
        client.close()


def _remove_quietly(client, ids: list[str]) -> None:
    """Force-remove containers and their anonymous volumes; already gone is fine."""
    docker = _docker()
    for container_id in list(ids):
        try:
            client.api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.DockerException as exc:
            log.warning("could not remove docker container %s: %s", container_id[:12], exc)
        if container_id in ids:
            ids.remove(container_id)

