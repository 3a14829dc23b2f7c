"""One way to read a typed number: the practice box and the matrix paste box read "1,5", "−0.5" and full-width
digits alike (attention_core/inputs/numbers.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_core.errors import InputError
from attention_core.inputs.matrix_text import parse_matrix
from attention_core.inputs.numbers import read_number, split_row
from attention_core.practice import parse_answer

FULL_WIDTH = str.maketrans("0123456789.-", "０１２３４５６７８９．－")


@pytest.mark.parametrize("typed, value", [
    ("0.25", 0.25), ("0,25", 0.25), ("−0.5", -0.5), ("−0,5", -0.5), ("１.２５", 1.25), ("－３", -3.0),
    (" 7 ", 7.0), ("1e-3", 0.001), ("+2", 2.0), ("１，５", 1.5),
])
def test_every_box_reads_a_number_the_same_way(typed, value):
    assert read_number(typed) == value
    assert parse_answer(typed) == value
    assert parse_matrix(f"{typed} 1", 1, 2, label="X", max_abs=1e6) == [[value, 1.0]]


@pytest.mark.parametrize("typed", ["", "abc", "1,2,3", "1.2,3", "0x10", "2*3", "__import__('os')"])
def test_what_is_not_one_number_is_refused(typed):
    with pytest.raises(ValueError):
        read_number(typed)


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6))
def test_any_float_typed_with_a_point_a_comma_a_minus_sign_or_full_width_digits_reads_back(x):
    text = f"{x:.6f}"
    expected = float(text)
    assert read_number(text) == expected
    assert read_number(text.replace(".", ",")) == expected
    assert read_number(text.replace("-", "−")) == expected
    assert read_number(text.translate(FULL_WIDTH)) == expected


@pytest.mark.parametrize("line, cols, words", [
    ("1, 2, 3", 3, ["1", "2", "3"]),
    ("1,2,3", 3, ["1", "2", "3"]),
    ("0,25 0,5", 2, ["0.25", "0.5"]),
    ("0,25;0,5;-1", 3, ["0.25", "0.5", "-1"]),
    ("1,5\t2,5", 2, ["1.5", "2.5"]),
    ("1,2", 2, ["1", "2"]),  # two numbers: commas separate when that gives the row's length
    ("0.5, 1,5", 3, ["0.5", "1", "5"]),  # a decimal point: commas only separate
])
def test_a_row_splits_by_commas_first_then_reads_decimal_commas(line, cols, words):
    assert split_row(line, cols) == words


def test_a_european_paste_reads_as_the_numbers_meant():
    text = "0,25 −0,5\n1,5 ２\n"
    assert parse_matrix(text, 2, 2, label="X", max_abs=1e6) == [[0.25, -0.5], [1.5, 2.0]]
    assert parse_matrix("tensor([[0.25, -0.5],\n [1.5, 2.0]])", 2, 2, label="X", max_abs=1e6) == [[0.25, -0.5],
                                                                                                  [1.5, 2.0]]


@pytest.mark.parametrize("text, says", [
    ("0,25 abc", "is not a number"),
    ("0,25 inf", "values must lie between"),
    ("1,5 2,5 3,5", "needs 2 numbers; it has 3"),
])
def test_a_paste_with_a_bad_word_still_names_it(text, says):
    with pytest.raises(InputError) as error:
        parse_matrix(text, 1, 2, label="X", max_abs=1e6)
    assert says in error.value.message


def test_nan_and_inf_are_read_then_refused_by_the_boxes():
    assert math.isnan(read_number("nan")) and read_number("−inf") == -math.inf
    for typed in ("nan", "inf"):
        with pytest.raises(InputError):
            parse_answer(typed)
