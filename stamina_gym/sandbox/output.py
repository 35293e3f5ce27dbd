"""Output capture shared by the sandbox backends: keep the head and the tail of a
command's output, count every byte, and turn what happened into a ``RunResult``."""

from __future__ import annotations

import signal

from stamina_gym.run_result import RunResult
from stamina_gym.sandbox import disk

#: Output beyond this many bytes ends the command: nobody reads 16 MiB of a log.
HARD_OUTPUT_LIMIT = 16 * 1024 * 1024

_SIGNAL_LIMITS = {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "file_size"}


class Capture:
    """Head and tail of at most ``limit`` bytes in all, plus the total byte count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.half = max(limit // 2, 1)
        self.head, self.tail = bytearray(), bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> bool:
        """Keep what is shown of ``chunk``; True once the hard output limit is passed."""
        self.total += len(chunk)
        if len(self.head) < self.half:
            take = self.half - len(self.head)
            self.head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            self.tail += chunk
            del self.tail[: -self.half]
        return self.total > HARD_OUTPUT_LIMIT

    def result(self, code: int, killed: str | None, duration: float) -> RunResult:
        """``killed`` is ``timeout``, ``output`` or ``disk <what was written>`` when the
        sandbox ended the command."""
        sig = -code if code < 0 else (code - 128 if 128 < code < 160 else None)
        text = self.head.decode("utf-8", "replace")
        shown = len(self.head) + len(self.tail)
        truncated = self.total > shown
        if truncated:
            text += f"\n[... {self.total - shown} bytes of output cut ...]\n"
        text += self.tail.decode("utf-8", "replace")
        if killed == "timeout":
            text += "\n[stamina-gym: command killed after its wall-clock timeout]"
        elif killed == "output":
            text += f"\n[stamina-gym: command killed after {HARD_OUTPUT_LIMIT} bytes of output]"
        elif killed and killed.startswith("disk"):
            text += disk.note(killed.partition(" ")[2])
        limit_hit = "output" if killed == "output" else "disk" if killed and killed.startswith("disk") else (
            _SIGNAL_LIMITS.get(sig) if sig else None)
        if limit_hit is None and killed is None and code != 0 and "MemoryError" in text[-2000:]:
            limit_hit = "memory"
        return RunResult(
            exit_code=code,
            output=text,
            output_bytes=self.total,
            truncated=truncated,
            timed_out=killed == "timeout",
            limit=limit_hit,
            signal=sig,
            duration_s=duration,
        )
