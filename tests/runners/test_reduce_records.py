"""Records: a field nothing reads goes with the arguments that fill it."""
from __future__ import annotations

from runners.reduce import Reducer
from runners.reduce.records import field_edits
from tests.runners.test_reduce import prints
from tests.runners.test_reduce_modules import applied

DETECTIONS = """\
from dataclasses import dataclass


@dataclass
class Detections:
    boxes: list
    scores: list
    labels: list = None


def detect(x):
    return Detections([x], scores=[x * 2], labels=[x + 1])


print(type(detect(1)).__name__)
"""


def test_each_unread_field_is_one_candidate_dropping_its_arguments_too():
    found = [program for _, program in applied(DETECTIONS, field_edits)]
    assert len(found) == 3
    boxes, scores, labels = found
    assert "boxes: list" not in boxes and "Detections(scores=[x * 2], labels=[x + 1])" in boxes
    assert "scores: list" not in scores and "Detections([x], labels=[x + 1])" in scores
    assert "labels: list" not in labels and "Detections([x], scores=[x * 2])" in labels
    for program in found:
        assert prints("Detections\n")(program)


def test_a_field_read_anywhere_stays():
    read = DETECTIONS.replace("print(type(detect(1)).__name__)", "print(detect(1).scores)")
    assert [p for _, p in applied(read, field_edits) if "scores: list" not in p] == []
    by_name = DETECTIONS.replace("print(type(detect(1)).__name__)", "print(getattr(detect(1), 'labels'))")
    assert [p for _, p in applied(by_name, field_edits) if "labels: list" not in p] == []


def test_a_record_used_other_than_by_calling_it_is_left_alone():
    passed_around = DETECTIONS + "print(Detections.__name__)\n"
    assert applied(passed_around, field_edits) == []
    spread = DETECTIONS.replace("Detections([x], scores=[x * 2], labels=[x + 1])", "Detections(*[[x], [x], [x]])")
    assert applied(spread, field_edits) == []
    inherited = DETECTIONS.replace("class Detections:", "class Detections(Base):")
    assert applied(inherited, field_edits) == []


def test_named_tuples_count_and_plain_or_classvar_annotations_do_not():
    named = "from typing import NamedTuple\n\n\nclass Pair(NamedTuple):\n    a: int\n    b: int\n\n\nprint(Pair(1, b=2)[0])\n"
    assert [p.count("Pair(") for _, p in applied(named, field_edits)] == [2, 2]
    plain = "class Box:\n    a: int = 1\n\n\nprint(Box().a + 1)\n"
    assert applied(plain, field_edits) == []
    class_var = ("from dataclasses import dataclass\nfrom typing import ClassVar\n\n\n@dataclass\nclass C:\n"
                 "    k: ClassVar[int] = 1\n\n\nprint(C())\n")
    assert applied(class_var, field_edits) == []


def test_the_reducer_leaves_one_field_where_the_output_type_is_what_matters():
    reduced = Reducer(prints("Detections\n")).reduce(DETECTIONS).source
    assert "boxes" not in reduced and "scores" not in reduced and "labels" not in reduced
    assert prints("Detections\n")(reduced)
