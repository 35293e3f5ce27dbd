import json

import pytest

from notify.prefs import Preferences


def test_defaults_email_on_others_off():
    prefs = Preferences()
    assert prefs.should_send("ann", "comment", "email", 12) is True
    assert prefs.should_send("ann", "comment", "sms", 12) is False
    assert prefs.should_send("ann", "comment", "push", 12) is False


def test_set_per_event_and_unknown_channel():
    prefs = Preferences()
    prefs.set("ann", "comment", "push", True)
    prefs.set("ann", "comment", "email", False)
    assert prefs.should_send("ann", "comment", "push", 12) is True
    assert prefs.should_send("ann", "comment", "email", 12) is False
    assert prefs.should_send("ann", "like", "email", 12) is True
    with pytest.raises(ValueError):
        prefs.set("ann", "comment", "fax", True)


def test_quiet_hours_from_ten_pm_to_seven_am():
    prefs = Preferences()
    assert [prefs.should_send("ann", "comment", "email", h) for h in (21, 22, 23, 0, 6, 7)] == [
        True, False, False, False, False, True,
    ]


def test_security_events_always_go_by_email():
    prefs = Preferences()
    prefs.set("ann", "security", "email", False)
    assert prefs.should_send("ann", "security", "email", 3) is True
    assert prefs.should_send("ann", "security", "sms", 3) is False


def test_saved_as_json_and_loaded_back(tmp_path):
    prefs = Preferences()
    prefs.set("ann", "comment", "sms", True)
    path = tmp_path / "prefs.json"
    prefs.save(path)
    json.loads(path.read_text())
    again = Preferences.load(path)
    assert again.should_send("ann", "comment", "sms", 12) is True
    assert again.should_send("bob", "comment", "sms", 12) is False
