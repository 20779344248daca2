"""help(agentkit.run) documents every setting: each keyword of run() and arun() has its entry in the
docstring, and Settings (what the core reads) is exported and written once."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

import agentkit
from agentkit.core.runs import Settings


@pytest.mark.parametrize("driver", [agentkit.run, agentkit.arun])
def test_every_keyword_of_the_drivers_has_an_entry_in_their_help(driver):
    doc = inspect.getdoc(driver)
    missing = [name for name in inspect.signature(driver).parameters
               if not re.search(rf"^\s*(?:\w+, )*{name}[,\s]", doc, re.M)]  # an entry may name several
    assert missing == []


@pytest.mark.parametrize("driver", [agentkit.run, agentkit.arun])
def test_every_setting_is_a_keyword_of_both_drivers_with_the_same_default(driver):
    parameters = inspect.signature(driver).parameters
    for setting in (f for f in dataclasses.fields(Settings) if f.init):
        assert setting.name in parameters, f"Settings.{setting.name} is not a keyword of {driver.__name__}"
        assert parameters[setting.name].default == setting.default, setting.name


def test_settings_is_exported_and_its_help_lists_every_setting():
    assert agentkit.Settings is Settings and "Settings" in agentkit.__all__
    doc = inspect.getdoc(Settings)
    missing = [f.name for f in dataclasses.fields(Settings) if f.init and not re.search(rf"^\s*{f.name}\s", doc, re.M)]
    assert missing == []
