"""The few error types of stamina-gym. Each says where it broke.

Agent mistakes never raise: they become observations. These are for the people who
configure, write tasks for, or operate the environment.
"""


class StaminaError(Exception):
    """Base class of every error raised by stamina-gym."""


class ConfigError(StaminaError):
    """An env spec, task file or argument is invalid; the message names the file and key."""


class TaskError(StaminaError):
    """A task on disk is malformed or fails validation."""


class SandboxError(StaminaError):
    """The sandbox itself could not run a command (an infrastructure fault, not the agent's)."""


class ToolError(StaminaError):
    """A tool refused an action; the message is shown to the agent as the observation."""


class PatchError(ToolError):
    """A unified diff could not be applied; the message says which file and hunk."""


class TreeTooLarge(ToolError):
    """A tree the agent wrote passed a cap: ``cap`` is ``max_files`` (entries: files,
    folders, links) or ``max_bytes`` (apparent sizes, so a sparse file counts in full),
    ``limit`` its value. Shown to the agent like any refusal; grading counts it as a
    resource failure."""

    def __init__(self, cap: str, limit: int) -> None:
        self.cap, self.limit = cap, limit
        if cap == "max_files":
            what = f"more than {limit} files, folders and links"
        else:
            what = f"more than {limit} bytes of files (sparse files count at their full size)"
        super().__init__(f"the tree holds {what}: over the {cap} cap")

    def __reduce__(self):
        return type(self), (self.cap, self.limit)
