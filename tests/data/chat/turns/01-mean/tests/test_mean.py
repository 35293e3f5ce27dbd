import pytest

from calc.stats import mean


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_empty_raises():
    with pytest.raises(ValueError):
        mean([])


def test_rounded_to_two_places():
    assert mean([1, 1, 2]) == 1.33
