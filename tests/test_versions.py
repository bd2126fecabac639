from __future__ import annotations

import pytest

from gpushare.domain.versions import (
    MINORS,
    choose_api,
    default_api,
    is_deprecated,
    kube_version_constraint,
    parse_kube_version,
    served_apis,
)
from gpushare.errors import InputError


def test_minors_are_1_20_to_1_36() -> None:
    assert tuple(range(20, 37)) == MINORS


@pytest.mark.parametrize(
    ("minor", "default", "served"),
    [
        (20, "v1beta1", ("policy", "v1beta1")),
        (21, "v1beta1", ("policy", "v1beta1")),
        (22, "v1beta2", ("policy", "v1beta1", "v1beta2")),
        (23, "v1beta3", ("v1beta2", "v1beta3")),
        (24, "v1beta3", ("v1beta2", "v1beta3")),
        (25, "v1", ("v1beta2", "v1beta3", "v1")),
        (27, "v1", ("v1beta2", "v1beta3", "v1")),
        (28, "v1", ("v1beta3", "v1")),
        (29, "v1", ("v1",)),  # v1beta3 removed
        (36, "v1", ("v1",)),
    ],
)
def test_config_api_table(minor: int, default: str, served: tuple[str, ...]) -> None:
    assert default_api(minor) == default
    assert served_apis(minor) == served


def test_unserved_api_is_a_clear_error() -> None:
    with pytest.raises(InputError) as exc:
        choose_api("v1beta2", 28)
    assert "scheduler.configApi: 'v1beta2' is not allowed" in str(exc.value)
    assert "1.22-1.27" in str(exc.value)
    assert choose_api("auto", 28) == "v1"


def test_deprecation() -> None:
    assert is_deprecated("v1beta3", 28) and not is_deprecated("v1beta3", 27) and not is_deprecated("v1", 28)


@pytest.mark.parametrize("text", ["1.19", "1.37", "2.0", "latest", "1.22.x", "", "v1.37.1"])
def test_bad_versions(text: str) -> None:
    with pytest.raises(InputError):
        parse_kube_version(text)


def test_versions_parse() -> None:
    assert parse_kube_version("v1.22.3").full == "v1.22.3"
    assert parse_kube_version("1.22").full == "v1.22.17"
    assert parse_kube_version("1.22").text == "1.22"
    assert kube_version_constraint(None) == ">=1.20.0-0 <1.37.0-0"
    assert parse_kube_version("1.29").full == "v1.29.6" and parse_kube_version("v1.36.3").minor == 36
    assert kube_version_constraint(parse_kube_version("1.24")) == ">=1.24.0-0 <1.25.0-0"
