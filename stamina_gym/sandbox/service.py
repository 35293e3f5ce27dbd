"""A long-lived command in the sandbox that answers each request line with one reply line
(the warm grading harness is one). Shared by the backends: they start the command and hand
over its byte streams; this reads the replies with a deadline."""

from __future__ import annotations

import select
import time
from typing import Callable

from stamina_gym.errors import SandboxError
from stamina_gym.run_result import RunResult
from stamina_gym.sandbox.disk import POLL_S, DiskWatch, note

#: Output a service writes besides its replies (a crash's traceback) is kept up to this.
NOISE_LIMIT = 64 * 1024


class LineService:
    """``ask`` writes one line and returns what came back up to the first line that starts
    with ``prefix``, as a ``RunResult``. ``before`` runs ahead of each request and may
    answer it itself; ``after`` runs once the reply is in. The first such line after the start is the
    service saying it is ready, and is not a reply; a service that ends before it is a
    ``SandboxError`` (nothing of the request has run). A service that misses a deadline is
    killed; one that ended is ``alive`` no more, and its owner starts another. ``disk`` gives
    each request's ``DiskWatch``: past its budget the service is killed too, and the reply
    carries ``limit="disk"``."""

    def __init__(self, *, write: Callable[[bytes], None], read: Callable[[], bytes], fileno: int, prefix: str,
                 kill: Callable[[], None], exit_code: Callable[[], int | None],
                 before: Callable[[], RunResult | None] = lambda: None,
                 after: Callable[[], None] = lambda: None,
                 disk: Callable[[], DiskWatch | None] = lambda: None) -> None:  # fmt: skip
        self._write, self._read, self._fileno = write, read, fileno
        self._disk = disk
        self._watch: DiskWatch | None = None
        self._written: str | None = None
        self._kill, self._exit_code = kill, exit_code
        self._before, self._after = before, after
        self._prefix = prefix.encode()
        self._buffer = b""
        self._ready = False
        self.alive = True

    def start(self, timeout: float) -> "LineService":
        """Wait for the ready line; a service that ends or stays silent is a ``SandboxError``."""
        if not self._ready:
            noise = bytearray()
            if self._reply(time.monotonic() + timeout, noise) is None:
                self.close()
                text = bytes(noise + self._buffer).decode("utf-8", "replace")[-2000:]
                raise SandboxError(f"the service did not start (exit {self._exit_code()}): {text}")
            self._ready = True
        return self

    def ask(self, line: str, timeout: float) -> RunResult:
        start = time.monotonic()
        deadline = start + timeout
        noise = bytearray()
        self.start(timeout)
        refused = self._before()
        if refused is not None:  # the backend would not make this request (a tree too big, say)
            return refused
        self._watch, self._written = self._disk(), None
        try:
            return self._exchange(line, start, deadline, noise)
        finally:
            self._watch = None
            if self.alive:
                self._after()

    def _exchange(self, line: str, start: float, deadline: float, noise: bytearray) -> RunResult:
        try:
            self._write(line.encode("utf-8") + b"\n")
        except OSError:
            return self._ended(noise, start, deadline)
        reply = self._reply(deadline, noise)
        if reply is None:
            return self._ended(noise, start, deadline)
        output = (bytes(noise) + reply).decode("utf-8", "replace")
        return RunResult(exit_code=0, output=output, output_bytes=len(output), duration_s=time.monotonic() - start)

    def close(self) -> None:
        if self.alive:
            self.alive = False
            self._kill()

    def _reply(self, deadline: float, noise: bytearray) -> bytes | None:
        """The next line that starts with the prefix; None at the end of the stream or the deadline."""
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.startswith(self._prefix):
                    return line + b"\n"
                if len(noise) < NOISE_LIMIT:
                    noise += line[: NOISE_LIMIT - len(noise)] + b"\n"
            remaining = deadline - time.monotonic()
            if self._watch is not None and (written := self._watch.exceeded()):
                self._written = written
                return None
            if remaining <= 0:
                return None
            polling = self._watch is not None  # look at the disk again at least every POLL_S
            if not select.select([self._fileno], [], [], min(remaining, POLL_S) if polling else remaining)[0]:
                if polling:
                    continue
                return None
            chunk = self._read()
            if not chunk:
                return None
            self._buffer += chunk

    def _ended(self, noise: bytearray, start: float, deadline: float) -> RunResult:
        written = self._written
        timed_out = not written and time.monotonic() >= deadline
        self.close()
        code = self._exit_code()
        text = bytes(noise + self._buffer).decode("utf-8", "replace")
        if timed_out:
            text += "\n[stamina-gym: the warm runner missed its deadline and was killed]"
        if written:
            text += note(written)
        return RunResult(exit_code=-9 if code is None else code, output=text, output_bytes=len(text), timed_out=timed_out,
                         limit="disk" if written else None, duration_s=time.monotonic() - start)  # fmt: skip
