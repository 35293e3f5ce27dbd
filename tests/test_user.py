"""The simulated user's pure parts: matching, plans, adherence detectors, scores."""

from __future__ import annotations

import pytest

from stamina_gym.config import ScoreConfig
from stamina_gym.errors import ToolError
from stamina_gym.task import Alternative, Decision, KeyPoint, Plan
from stamina_gym.user.adherence import DETECTORS, adherence, calls, imports, mentions
from stamina_gym.user.match import KeyPointMatcher
from stamina_gym.user.plan import judge_decisions, parse_plan, planning_f1
from stamina_gym.user.scoring import composite_score, generation_score, quality_of, turn_scores
from stamina_gym.user.text import has_phrase, tokens

POINTS = [
    KeyPoint(id="attempts", keywords=("how many", "failed logins"), phrasings=("How many failed attempts before the account is locked?",), answer="Five."),
    KeyPoint(id="duration", keywords=("how long",), phrasings=("How long does the lock last?", "When can a locked user try again?"), answer="15 minutes."),
    KeyPoint(id="unknown", keywords=("unknown user",), phrasings=("What should happen for a user name that does not exist?",), answer="False."),
]
CONTEXT = ["Add login lockout after too many failures.", "Lock accounts when people guess passwords."]


def matched(question, threshold=0.5):
    return [m.point for m in KeyPointMatcher(POINTS, CONTEXT, threshold).match(question)]


def test_keywords_match_whole_phrases_of_stemmed_words():
    assert has_phrase(tokens("After how many failed logins?"), "failed logins")
    assert has_phrase(tokens("Is the account locked out?"), "lock out")  # stems: locked -> lock
    assert not has_phrase(tokens("logins that failed"), "failed logins")  # word order counts
    assert not has_phrase(tokens("anything"), "the")  # stop words alone name nothing
    assert matched("How many tries are allowed?") == ["attempts"]
    assert matched("For an unknown user, what then?") == ["unknown"]


def test_similarity_reaches_a_point_without_keywords_and_the_threshold_governs_it():
    assert matched("How soon can a locked user try?") == ["duration"]  # no keyword; all words of a phrasing
    partial = "When does a locked user get in again?"  # shares two of the phrasing's three words
    similarity = KeyPointMatcher(POINTS, CONTEXT).similarity(partial)[1]
    assert 0.3 < similarity < 0.5
    assert matched(partial) == []
    assert matched(partial, threshold=0.3) == ["duration"]


def test_unrelated_questions_touch_nothing():
    for question in ("Which Python version?", "Should I write tests?", "Can I use third-party libraries?", ""):
        assert matched(question) == []


def test_a_single_shared_word_is_no_match():
    assert KeyPointMatcher(POINTS, CONTEXT).similarity("Where does the user live?")[2] == 0.0


def test_parse_plan_takes_strings_and_objects_and_names_what_is_wrong():
    plan = parse_plan(["first", {"description": "second", "details": "d", "depends_on": [1]}])
    assert [s.description for s in plan.steps] == ["first", "second"] and plan.steps[1].depends_on == (1,)
    with pytest.raises(ToolError, match="non-empty list"):
        parse_plan([])
    with pytest.raises(ToolError, match="step 2 depends on \\[2\\]"):
        parse_plan(["a", {"description": "b", "depends_on": [2]}])
    with pytest.raises(ToolError, match="steps.0.colour: unknown key"):
        parse_plan([{"description": "a", "colour": "red"}])


HASHING = Decision(
    id="hashing", topic="passwords", kind="calls",
    accept=(Alternative(name="pbkdf2", mentions=("pbkdf2",), code=("hashlib.pbkdf2_hmac",)),
            Alternative(name="scrypt", mentions=("scrypt",), code=("hashlib.scrypt",))),
    reject=(Alternative(name="md5", mentions=("md5",), code=("hashlib.md5",)),),
)  # fmt: skip
STORAGE = Decision(id="storage", topic="file format", kind="imports",
                   accept=(Alternative(name="json", mentions=("json",), code=("json",)),))  # fmt: skip


def plan_of(*steps):
    return Plan.model_validate({"steps": [{"description": s} for s in steps]})


def test_planning_score_is_the_f1_of_settled_decisions():
    both = judge_decisions([HASHING, STORAGE], plan_of("Hash with PBKDF2", "Save as JSON"))
    assert [v.verdict for v in both] == ["accepted", "accepted"] and planning_f1(both) == 1.0
    half = judge_decisions([HASHING, STORAGE], plan_of("Hash with scrypt"))
    assert planning_f1(half) == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # precision 1, recall 1/2
    wrong = judge_decisions([HASHING, STORAGE], plan_of("Hash with md5", "Save as JSON"))
    assert [v.verdict for v in wrong] == ["rejected", "accepted"]
    assert planning_f1(wrong) == pytest.approx(0.5)  # precision 1/2, recall 1/2
    assert planning_f1(judge_decisions([HASHING, STORAGE], None)) == 0.0


def test_detectors_read_the_code_not_the_tests():
    code = {"app/auth.py": "import hashlib\nimport json as j\n\ndef h(p, s):\n    return hashlib.pbkdf2_hmac('sha256', p, s, 10)\n"}
    assert calls(code, ["hashlib.pbkdf2_hmac"]) and calls(code, ["pbkdf2_hmac"]) and not calls(code, ["hashlib.md5"])
    assert imports(code, ["json"]) and imports(code, ["hashlib"]) and not imports(code, ["pickle"])
    assert mentions(code, [r"pbkdf2_\w+"]) and not mentions(code, [r"bcrypt"])
    verdicts = judge_decisions([HASHING, STORAGE], plan_of("Hash with PBKDF2", "Save as JSON"))
    assert adherence([HASHING, STORAGE], verdicts, code) == (1.0, {"hashing": True, "storage": True})
    only_in_tests = {"tests/test_auth.py": code["app/auth.py"], "app/auth.py": "def h(p):\n    return p\n"}
    assert adherence([HASHING, STORAGE], verdicts, only_in_tests) == (0.0, {"hashing": False, "storage": False})
    assert set(DETECTORS) == set(Decision.model_fields["kind"].annotation.__args__)


def test_scores_drop_what_was_not_measured_and_rescale_the_rest():
    w = ScoreConfig()
    assert generation_score(1.0, None, None, w) == 1.0
    assert generation_score(0.5, None, 1.0, w) == pytest.approx((0.7 * 0.5 + 0.1 * 1.0) / 0.8)
    assert generation_score(0.5, 0.0, 1.0, w) == pytest.approx(0.7 * 0.5 + 0.1)
    assert composite_score(None, None, 0.4, w) == pytest.approx(0.4)
    assert composite_score(1.0, 0.0, 0.5, w) == pytest.approx(0.3 + 0.25)
    assert quality_of({"quality": {"score": 0.8}}) == 0.8 and quality_of({"quality": 1.7}) == 1.0
    assert quality_of({}) is None and quality_of({"quality": True}) is None
    grade = {"passed": 3, "total": 4}
    scores = turn_scores(coverage=0.5, relevance=1.0, planning=None, grade=grade, adherence=None, weights=w)
    assert scores == {"clarification": 0.7, "planning": None, "generation": 0.75,
                      "composite": pytest.approx((0.3 * 0.7 + 0.5 * 0.75) / 0.8)}  # fmt: skip
