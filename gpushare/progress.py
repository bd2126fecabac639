"""Progress on a terminal for work that runs long: a bar on stderr once two seconds have passed (tqdm's delay),
never when stderr is not a terminal or the user asked for quiet, so pipelines and logs see nothing of it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Units of work between two updates of the bar: a tick stays a counter increment for hot loops.
_BATCH = 512


def wanted(quiet: bool = False) -> bool:
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress(total: int | None, unit: str, enabled: bool, step: bool = False) -> Iterator[Callable[..., None]]:
    """A `tick()` to call once per unit of work, or with `step`, an `advance(n)` for n units at once (bytes read);
    a no-op unless enabled. A None total: a count and a rate, for work whose size is learnt as it goes."""
    if not enabled or (total is not None and total < _BATCH):
        yield _nothing
        return
    from tqdm import tqdm

    delay = float(os.environ.get("GPUSHARE_PROGRESS_DELAY", "2"))  # seconds before a bar appears
    bar = tqdm(
        total=total,
        unit=unit if step else f" {unit}",
        unit_scale=step and total is not None,
        delay=delay,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count == _BATCH:
            bar.update(count)
            count = 0

    try:
        yield bar.update if step else tick
    finally:
        bar.close()


def _nothing(*_: int) -> None:
    return None
