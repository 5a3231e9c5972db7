from bot.evaluate import evaluate


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
    assert report.mistakes == (("b", "graph_break", "dynamic_shapes"),)
    assert report.to_dict()["per_category"]["accuracy"]["f1"] == 1.0


def test_empty_corpus():
    report = evaluate([])
    assert (report.n, report.accuracy, report.per_category) == (0, 0.0, {})
