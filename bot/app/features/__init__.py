"""The App's behaviours, one module each: parse -> decide -> act.

Every module in this package is a feature, found here by itself: adding a behaviour is adding a
file (and its test), with nothing else to register. A feature module has:

    ROUTES                         the (event, action) pairs it listens to
    parse(event) -> Input | None   pure and cheap: the event as the feature's input, or "not for me";
                                   the webhook intake calls it too, to make a job only when some
                                   feature wants the event
    observe(input, ctx) -> State   reads what deciding needs: the repo config, the store, GitHub
    decide(input, state) -> Plan   pure: what to do, as plain values (bot/app/plan.py)
    act(plan, gh, store)           does it: each step once, checkpointed (a retry never posts twice)

Modules whose name starts with `_` are not features.
"""
from __future__ import annotations

import pkgutil
from functools import lru_cache
from importlib import import_module
from types import ModuleType

from bot.app.event import Event


@lru_cache(maxsize=1)
def features() -> tuple[ModuleType, ...]:
    """Every feature module of this package, by name."""
    names = sorted(module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_"))
    return tuple(import_module(f"{__name__}.{name}") for name in names)


def routes() -> frozenset[tuple[str, str]]:
    """The (event, action) pairs some feature listens to: the union of the features' routes."""
    return frozenset().union(*(feature.ROUTES for feature in features()))


def for_event(name: str, action: str | None) -> tuple[ModuleType, ...]:
    return tuple(feature for feature in features() if (name, action) in feature.ROUTES)


def wanted(event: Event) -> bool:
    """Whether some feature takes this event (pure: the intake asks before it makes a job)."""
    return any(feature.parse(event) is not None for feature in for_event(event.name, event.action))


def feature_name(feature: ModuleType) -> str:
    return feature.__name__.rsplit(".", 1)[-1]
