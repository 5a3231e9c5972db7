"""How the verdict states its calibrated confidence (bot/core/combine.py)."""
from __future__ import annotations

import pytest

from bot.core.combine import shown


@pytest.mark.parametrize("measured, stated", [(0.8974, 0.89), (0.29, 0.29), (0.9, 0.9), (0.9688, 0.96), (0.0, 0.0)])
def test_a_confidence_is_stated_to_two_places_and_never_above_what_was_measured(measured, stated):
    assert shown(measured) == stated
