"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`) as exact integers, via the kubernetes client's parser."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from kubernetes.utils import parse_quantity


class QuantityError(ValueError):
    """A quantity Kubernetes would refuse, with the reason."""


def _decimal(value: object) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    try:
        result = parse_quantity(value)  # type: ignore[no-untyped-call]
    except (ValueError, TypeError, InvalidOperation):
        raise QuantityError(f"{value!r} is not a quantity") from None
    if not result.is_finite():
        raise QuantityError(f"{value!r} is not a finite quantity")
    if result < 0:
        raise QuantityError(f"{value!r} is negative")
    return Decimal(result)


def milli(value: object) -> int:
    """CPU in millicores, rounded up as the scheduler does."""
    return math.ceil(_decimal(value) * 1000)


def whole(value: object) -> int:
    """Bytes, pods, or an extended resource: rounded up to an integer."""
    return math.ceil(_decimal(value))


def count(value: object) -> int:
    """An extended resource such as aliyun.com/gpu-mem: must be a whole number."""
    number = _decimal(value)
    if number != number.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    return int(number)
