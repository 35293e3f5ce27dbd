import pytest

from catalog.search import search

PRODUCTS = [
    {"name": "Red Kettle", "description": "Boils water fast", "category": "Kitchen", "price": 30},
    {"name": "Blue kettle", "description": "Quiet steel KETTLE", "category": "kitchen", "price": 25},
    {"name": "Desk Lamp", "description": "Warm red light", "category": "Office", "price": 30},
    {"name": "Armchair", "description": "Soft and red", "category": "Living", "price": 120},
    {"name": "Alarm clock", "description": "Loud", "category": "Office", "price": 25},
]


def names(found):
    return [p["name"] for p in found]


def test_query_matches_name_or_description_in_any_case():
    assert names(search(PRODUCTS, "KETTLE")) == ["Blue kettle", "Red Kettle"]
    assert names(search(PRODUCTS, "red")) == ["Desk Lamp", "Red Kettle", "Armchair"]
    assert len(search(PRODUCTS, "")) == len(PRODUCTS)


def test_every_word_must_match():
    assert names(search(PRODUCTS, "red light")) == ["Desk Lamp"]
    assert search(PRODUCTS, "kettle lamp") == []


def test_price_range_is_inclusive():
    assert names(search(PRODUCTS, "", min_price=25, max_price=30)) == ["Alarm clock", "Blue kettle", "Desk Lamp", "Red Kettle"]
    assert names(search(PRODUCTS, "", min_price=31)) == ["Armchair"]


def test_category_ignores_case():
    assert names(search(PRODUCTS, "", category="KITCHEN")) == ["Blue kettle", "Red Kettle"]


def test_cheapest_first_then_by_name():
    assert names(search(PRODUCTS, "")) == ["Alarm clock", "Blue kettle", "Desk Lamp", "Red Kettle", "Armchair"]


def test_unknown_filter_is_an_error():
    with pytest.raises(ValueError):
        search(PRODUCTS, "", colour="red")
