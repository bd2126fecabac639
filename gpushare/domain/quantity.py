"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`) as exact integers, via the kubernetes client's parser."""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any


def _kubernetes_parser() -> Callable[[Any], Decimal]:
    """The kubernetes client's `parse_quantity`, loaded from its own module file: importing it the usual way runs
    the client package's __init__, which loads the whole API client (about 0.3 s) for one small function."""
    package = importlib.util.find_spec("kubernetes")  # finds the package without importing it
    if package is not None and package.submodule_search_locations:
        for directory in package.submodule_search_locations:
            spec = importlib.util.spec_from_file_location(
                "gpushare._kubernetes_quantity", f"{directory}/utils/quantity.py"
            )
            if spec is not None and spec.loader is not None:
                try:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    return module.parse_quantity  # type: ignore[no-any-return]
                except (OSError, AttributeError):
                    break
    from kubernetes.utils import parse_quantity  # the file moved: the usual import, slower

    return parse_quantity


parse_quantity = _kubernetes_parser()


class QuantityError(ValueError):
    """A quantity Kubernetes would refuse, with the reason."""


def _decimal(value: object) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    try:
        result = parse_quantity(value)
    except (ValueError, TypeError, InvalidOperation):
        raise QuantityError(f"{value!r} is not a quantity") from None
    if not result.is_finite():
        raise QuantityError(f"{value!r} is not a finite quantity")
    if result < 0:
        raise QuantityError(f"{value!r} is negative")
    return Decimal(result)


def _remembered(parse: Callable[[object], int]) -> Callable[[object], int]:
    """`parse`, remembering its answers: a fleet writes the same few quantities (`2`, `8Gi`, `500m`) thousands of
    times, and Decimal arithmetic costs microseconds each. Types are kept apart (`1`, `"1"` and `True` differ)."""
    remembered = functools.lru_cache(maxsize=1 << 14, typed=True)(parse)

    @functools.wraps(parse)
    def cached(value: object) -> int:
        try:
            return remembered(value)
        except TypeError:  # unhashable (a mapping where a quantity belongs): refused without the cache
            return parse(value)

    return cached


@_remembered
def milli(value: object) -> int:
    """CPU in millicores, rounded up as the scheduler does."""
    return math.ceil(_decimal(value) * 1000)


@_remembered
def whole(value: object) -> int:
    """Bytes, pods, or an extended resource: rounded up to an integer."""
    return math.ceil(_decimal(value))


@_remembered
def count(value: object) -> int:
    """An extended resource such as aliyun.com/gpu-mem: must be a whole number."""
    number = _decimal(value)
    if number != number.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    return int(number)
