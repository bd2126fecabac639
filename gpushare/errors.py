"""Errors a user can act on: each names the field, the value and what is allowed; and the signals that end a
command (Ctrl-C, SIGTERM), which end it as cleanly."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: How much of a value a message quotes: enough to recognise it, never a whole file.
QUOTE_LIMIT = 120


def listed(names: Sequence[str], most: int = 5) -> str:
    """Names as a message lists them: the first `most`, then how many more, so a fleet-sized list stays one line."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def counted(n: int, word: str) -> str:
    """`n word` as English counts it: 1 error, 2 errors, 5 Pods, 2 PriorityClasses."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}es" if word.endswith(("s", "x", "ch", "sh")) else f"{n} {word}s"


def shown(value: Any) -> str:
    """A value as a message quotes it: `unset` for None, repr otherwise, cut to QUOTE_LIMIT characters."""
    if value is None:
        return "unset"
    text = repr(value)
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 3] + "..."


def not_allowed(field: str, value: Any, allowed: str) -> str:
    """The sentence every refusal speaks (settings, flags, a rule's finding, a malformed object), so a user reads
    one form whichever part of gpushare refused."""
    return f"{field}: {shown(value)} is not allowed; expected {allowed}"


class GpushareError(Exception):
    """Base of every error the library raises on purpose."""


class MissingDependency(GpushareError):
    """A feature needs an optional package that is not installed: the message names the feature and the command
    that installs it. The CLI exits 2 before any work, as for bad input."""

    def __init__(self, feature: str, package: str, install: str) -> None:
        self.feature, self.package, self.install = feature, package, install
        super().__init__(f"{feature} needs {package}, which is not installed: {install}")


class InputError(GpushareError):
    """Bad settings or arguments: the CLI prints the one-line message and exits 2, writing nothing."""

    def __init__(self, field: str, value: Any, allowed: str, where: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(prefix + not_allowed(field, value, allowed))


# --- the signals that end a command -----------------------------------------------------------------------------
#
# Ctrl-C and SIGTERM while a command runs: the exceptions they raise, and a record that they came.
#
# Python runs a signal's handler between two steps of interpreted code, wherever those are. When they are in a
# finalizer (a generator closed as it is dropped, an object's `__del__`), the exception the handler raises is printed
# as "ignored" and lost: the command would go on, write its output and exit 0 after the user pressed Ctrl-C (compiled
# code, whose interpreted steps are few, may make that likelier). So the handler also records the signal, and the
# command looks at the record where it commits its output and as it returns (`raise_if_signalled`).


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that cleanups run (no partial output is left) as for Ctrl-C."""


#: The signals received within `signals_handled()`, first first.
_received: list[int] = []


def _exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise _exception(signum)


@contextmanager
def signals_handled() -> Iterator[None]:
    """For the block, SIGINT raises KeyboardInterrupt and SIGTERM `Terminated`, each recorded. SIGINT is taken over
    only from Python's own handler: a process started with it ignored (a shell's background job) keeps ignoring it,
    and a program calling the library with a handler of its own keeps that. Outside the main thread, where no handler
    can be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signum == signal.SIGINT and signal.getsignal(signum) is not signal.default_int_handler:
            continue
        previous[signum] = signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _received.clear()  # the record is the block's alone


def raise_if_signalled() -> None:
    """The first signal received within `signals_handled()` raised again: its own exception may have been lost in a
    finalizer (see above); where it was not, the command has already ended by it and never comes here."""
    if _received:
        raise _exception(_received[0])
