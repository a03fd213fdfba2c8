"""The refusals every layer raises: a leaf module (it imports nothing from fedlib), so algorithms, models, data and
the configuration can all name `ConfigError` at module level without importing each other.

`fedlib.config` re-exports both names (`from fedlib.config import ConfigError` keeps working).
"""


class Refused(ValueError):
    """A refusal before any compute (CLI exit 2); the one-line message says what is wrong and what is allowed."""

    def _render_traceback_(self) -> list[str]:       # IPython / papermill (a DVC stage): this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


class ConfigError(Refused):
    """An invalid configuration value; the message names the field and what is allowed."""


__all__ = ["ConfigError", "Refused"]
