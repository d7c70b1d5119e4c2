"""The harness's exceptions: one small hierarchy, each carries what a user
needs to act on it."""

from __future__ import annotations


class BlklabError(Exception):
    """Base of every error the harness reports to its user."""

    exit_code = 1


class ScenarioError(BlklabError):
    """A scenario file is missing or invalid. Names the file and the key."""

    exit_code = 2

    def __init__(self, path: str, key: str | None, message: str):
        self.path = path
        self.key = key
        self.message = message
        where = f"{path}: {key}: " if key else f"{path}: "
        super().__init__(where + message)


class BuildMissingError(BlklabError):
    """QEMU or the guest image has not been built."""


class VMError(BlklabError):
    """A VM failed to launch or to finish. Carries the command line and the
    console log so that the failure can be reproduced by hand."""

    def __init__(self, message: str, cmdline: list[str], console_log: str = ""):
        self.cmdline = cmdline
        self.console_log = console_log
        super().__init__(message)
