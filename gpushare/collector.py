"""Python's cyclic garbage collector, paused for one pass over a large input.

A command, or one placement run, allocates millions of small objects that live until it ends and hold no reference
cycles, so reference counting frees them. The collector, triggered by those allocations, would walk the growing
heap again and again to find nothing: 29% of a large `place`, a fifth of the engine's time on 100,000 pods.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block and back on after it, if it was on; nested pauses leave it to the outer.

    What the block made and kept (a fleet's model, a placement) is then all in the youngest generation, and the
    first allocation after the collector is back would walk it whole (a third of a second for a model of 100,000
    pods, each time a planner answer returns to Python). It is moved to the oldest generation unwalked instead
    (`gc.freeze` then `gc.unfreeze`, where nothing else was frozen): its cycles, if any, are freed by the next full
    collection."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def sweep() -> None:
    """Free the cycles made since the last sweep (youngest generation only) while the collector is paused: a
    streaming pass holds little at once but leaves cycles behind it (json's indenting encoder makes a ring of
    closures per call), which, never collected, would grow with the stream instead of staying flat."""
    if not gc.isenabled():
        gc.collect(0)
