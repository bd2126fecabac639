"""The committed chart and schema are what the generator makes today."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from regenerate import REPO, SETTINGS_SCHEMA, expected

from gpushare import load_settings
from gpushare.errors import InputError


def test_generated_files_in_sync() -> None:
    want = expected()
    stale = [str(p) for p, text in want.items() if not p.exists() or p.read_text() != text]
    extra = [str(p) for p in (REPO / "charts").rglob("*") if p.is_file() and p not in want]
    assert not stale and not extra, f"run `python tests/regenerate.py`: stale {stale}, unexpected {extra}"


def test_settings_schema_agrees_with_the_model() -> None:
    validator = Draft202012Validator(json.loads(SETTINGS_SCHEMA.read_text()))
    good = {
        "apiVersion": "gpushare.io/v1alpha1",
        "kind": "InstallerSettings",
        "profile": "open-source",
        "kubernetesVersion": "1.22",
        "scheduler": {"mode": "secondary", "replicas": 2},
    }
    assert not list(validator.iter_errors(good))
    load_settings(good)
    for bad, field in (
        ({"profile": "nope"}, "profile"),
        ({"unknown": 1}, "unknown"),
        ({"scheduler": {"replicas": 0}}, "scheduler.replicas"),
        ({"extender": {"port": 80}}, "extender.port"),
        ({"isolation": []}, "isolation"),
    ):
        errors = list(validator.iter_errors(bad))
        assert errors, bad
        # the schema and the model refuse the same field
        where = ".".join(str(p) for p in errors[0].absolute_path) or str(errors[0].message)
        assert field.split(".")[-1] in where or field in errors[0].message
        with pytest.raises(InputError, match=field):
            load_settings(bad)
