"""SQuAD EM / F1 on official-style cases, hand-computed."""

import pytest

from kbert.metrics import exact_match, normalize_answer, squad_evaluate, token_f1


def test_normalize_answer():
    assert normalize_answer("The Quick, Brown fox!") == "quick brown fox"
    assert normalize_answer("an apple a day") == "apple day"
    assert normalize_answer("theater Anthem") == "theater anthem"  # articles only as whole words
    assert normalize_answer("  1,000\tmiles\n") == "1000 miles"
    assert normalize_answer("The") == ""


def test_exact_match_takes_the_best_gold():
    assert exact_match("Denver Broncos", ["Denver Broncos", "The Denver Broncos"]) == 1.0
    assert exact_match("the denver broncos.", ["Broncos", "Denver Broncos"]) == 1.0
    assert exact_match("Broncos team", ["Denver Broncos"]) == 0.0


def test_token_f1_hand_computed():
    # pred [broncos, of, denver], gold [denver, broncos]: common 2 -> P 2/3, R 1 -> F1 0.8
    assert token_f1("the Broncos of Denver", ["Denver Broncos"]) == pytest.approx(0.8)
    # max over golds: vs "Panthers" 2/3, vs "Carolina Panthers team" 0.8
    assert token_f1("Carolina Panthers", ["Panthers", "the Carolina Panthers team"]) == pytest.approx(0.8)
    # repeated tokens count with multiplicity: common {x:1, y:1} -> P = R = 2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert token_f1("nothing shared", ["Denver"]) == 0.0


def test_no_answer_rules():
    assert exact_match("", []) == 1.0
    assert token_f1("", []) == 1.0
    assert exact_match("Paris", []) == 0.0
    assert token_f1("Paris", []) == 0.0
    assert token_f1("", ["Paris"]) == 0.0


def test_squad_evaluate_v1():
    examples = [
        {"id": "q1", "answers": [{"text": "Denver Broncos", "answer_start": 0}]},
        {"id": "q2", "answers": [{"text": "Denver Broncos", "answer_start": 0}, {"text": "Broncos", "answer_start": 7}]},
        {"id": "q3", "answers": [{"text": "Santa Clara", "answer_start": 3}]},
    ]
    predictions = {"q1": "the Denver Broncos", "q2": "the Broncos of Denver"}  # q3 unanswered -> 0
    result = squad_evaluate(examples, predictions)
    # EM: 1, 0, 0 -> 33.33; F1: 1, max(0.8, 2*(1/3)*1/(4/3) = 0.5) = 0.8, 0 -> 60
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(60.0)
    assert (result["total"], result["num_missing"]) == (3, 1)
    assert "no_answer_total" not in result


def test_squad_evaluate_v2_breakdown():
    examples = [
        {"id": "a", "answers": [{"text": "Paris", "answer_start": 0}]},
        {"id": "b", "answers": []},
        {"id": "c", "answers": []},
        {"id": "d", "answers": ["Rome"]},
    ]
    predictions = {"a": "Paris", "b": "", "c": "London", "d": ""}
    result = squad_evaluate(examples, predictions)
    assert result["exact_match"] == pytest.approx(50.0)
    assert result["has_answer_exact_match"] == pytest.approx(50.0)
    assert result["no_answer_exact_match"] == pytest.approx(50.0)
    assert (result["has_answer_total"], result["no_answer_total"]) == (2, 2)
    with pytest.raises(ValueError, match="no examples"):
        squad_evaluate([], {})


def test_chinese_answers_score_by_character():
    # CMRC 2018 counts each Chinese character as a token and ignores Chinese punctuation.
    # "北京大学" vs gold "北京": 2 common of 4 predicted and 2 gold -> P 0.5, R 1, F1 2/3.
    assert token_f1("北京大学", ["北京"]) == pytest.approx(2 / 3)
    assert token_f1("北京。", ["北京"]) == 1.0
    assert token_f1("上海", ["北京"]) == 0.0
    # Mixed text: Latin words stay whole; ASCII-only answers keep the official SQuAD tokens.
    assert token_f1("2019年", ["2019"]) == pytest.approx(2 / 3)
    assert token_f1("the Denver Broncos", ["Broncos"]) == pytest.approx(2 / 3)
