"""What one sandboxed command did, as captured: the value the sandbox returns and
grading reads. A module of its own, so that grading and its cache judge results without
importing the sandbox."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunResult:
    """What one command did. ``output`` is stdout and stderr interleaved, cut in the
    middle past the configured size (``truncated``)."""

    exit_code: int
    output: str
    output_bytes: int
    truncated: bool = False
    timed_out: bool = False
    limit: str | None = None
    """``cpu``, ``file_size``, ``output``, ``memory`` or ``disk`` when a resource limit stopped it."""
    signal: int | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.limit is None
