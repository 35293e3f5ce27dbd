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
