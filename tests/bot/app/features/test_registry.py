"""The features find themselves: a new behaviour is one module in bot/app/features (and its test)."""
from __future__ import annotations

from bot.app import features
from bot.app.event import Event

from .conftest import event


def test_every_feature_has_routes_parse_observe_decide_and_act():
    names = [features.feature_name(feature) for feature in features.features()]
    assert names == ["ci_watch", "comment_commands", "issue_suggestions", "label_triage", "runner_report"]
    for feature in features.features():
        assert feature.ROUTES and all(isinstance(route, tuple) and len(route) == 2 for route in feature.ROUTES)
        assert all(callable(getattr(feature, name)) for name in ("parse", "observe", "decide", "act"))


def test_the_intake_listens_to_the_union_of_the_features_routes():
    assert features.routes() == {("issues", "labeled"), ("issues", "opened"), ("issues", "edited"),
                                 ("issue_comment", "created"), ("workflow_run", "completed")}
    both = [features.feature_name(f) for f in features.for_event("workflow_run", "completed")]
    assert both == ["ci_watch", "runner_report"]  # one event, two behaviours: each decides for itself


def test_an_event_is_wanted_when_some_feature_parses_it():
    assert features.wanted(event("issues", "issues_labeled"))
    assert features.wanted(event("workflow_run", "workflow_run_completed_runner"))
    assert not features.wanted(Event("ping", None, {"zen": "Keep it logically awesome."}))
    assert not features.wanted(Event("issues", "closed", event("issues", "issues_labeled").payload))
