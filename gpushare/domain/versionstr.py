"""Comparing the version strings the product's prerequisites name (drivers, cGPU, ACK schedulers)."""

from __future__ import annotations

import re


def numbers(text: str) -> tuple[int, ...]:
    """`v1.26.3-aliyun-4.1-a520c096` -> (1, 26, 3, 4, 1); `470.161.03` -> (470, 161, 3). Hex build ids and
    SemVer build metadata (`1.2.0+gpushare.0.2.0`) are dropped."""
    base, _, suffix = text.strip().lstrip("vV").partition("+")[0].partition("-")
    head = tuple(int(n[:18]) for n in re.findall(r"\d+", base))  # a hostile 10,000-digit part stays a number
    match = re.search(r"(?:ack|aliyun)-([\d.]+)", suffix)
    return head + (tuple(int(n[:18]) for n in match.group(1).split(".") if n) if match else ())


def at_least(text: str, minimum: str) -> bool:
    return numbers(text) >= numbers(minimum)


def valid(text: str) -> bool:
    return bool(re.match(r"^v?\d{1,9}(\.\d{1,9})*", text.strip()))
