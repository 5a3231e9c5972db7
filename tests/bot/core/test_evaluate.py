from bot.core.evaluate import Outcome, evaluate


def test_accuracy_precision_recall_and_confusions():
    report = evaluate([
        ("a", "graph_break", "graph_break"),
        ("b", "graph_break", "dynamic_shapes"),
        ("c", "dynamic_shapes", "dynamic_shapes"),
        ("d", "accuracy", "accuracy"),
    ])
    assert report.n == 4 and report.accuracy == 0.75
    assert report.per_category["graph_break"].recall == 0.5
    assert report.per_category["graph_break"].precision == 1.0
    assert report.per_category["dynamic_shapes"].precision == 0.5
    assert report.confusions == (("graph_break", "dynamic_shapes", 1),)
    assert report.mistakes == (("b", "graph_break", "dynamic_shapes", 1.0),)
    assert report.to_dict()["per_category"]["accuracy"]["f1"] == 1.0
    assert report.labels == ("accuracy", "dynamic_shapes", "graph_break")
    assert report.matrix[2] == (0, 1, 1)  # graph_break: once called dynamic_shapes, once right


def test_coverage_curve_and_the_confident_not_pt2_mistakes():
    report = evaluate([
        Outcome("a", "graph_break", "graph_break", 0.95),
        Outcome("b", "accuracy", "not_pt2", 0.85),  # a PT2 report waved off, and sure of it: the worst case
        Outcome("c", "accuracy", "not_pt2", 0.40, unsure=True),
        Outcome("d", "not_pt2", "not_pt2", 0.92),
    ], not_pt2="not_pt2")
    by_threshold = {p.threshold: p for p in report.coverage}
    assert (by_threshold[0.9].covered, by_threshold[0.9].accuracy) == (2, 1.0)
    assert (by_threshold[0.8].covered, by_threshold[0.8].accuracy) == (3, 0.6667)
    assert by_threshold[0.0].coverage == 1.0
    assert report.confident_not_pt2 == 1
    assert (report.unsure, report.unsure_accuracy) == (1, 0.0)


def test_empty_corpus():
    report = evaluate([])
    assert (report.n, report.accuracy, report.per_category) == (0, 0.0, {})
