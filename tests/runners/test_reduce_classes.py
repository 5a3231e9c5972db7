"""Dissolving a plain class made for one object into module-level functions and names."""
from __future__ import annotations

from runners.reduce import Reducer
from runners.reduce.classes import class_edits
from tests.runners.test_reduce import prints
from tests.runners.test_reduce_modules import applied

PREDICTOR = """\
class Predictor:
    def __init__(self):
        self._predict = self._predict_impl

    def _predict_impl(self, tokens):
        return tokens * 2

    def __call__(self, tokens):
        return self._predict(tokens)


for tokens in range(3):
    label = Predictor()(tokens)
    print(label)
"""

TRAINER = """\
class Trainer:
    \"\"\"Keeps the step count.\"\"\"
    scale = 2

    def __init__(self, model, lr=0.1):
        self.model = model
        self.lr = lr
        self.steps = 0

    def step(self, x):
        self.steps += 1
        return self.model(x) * self.scale * self.lr


def model(x):
    return x + 1


trainer = Trainer(model, lr=0.5)
for i in range(2):
    print(trainer.step(i), trainer.steps)
"""


def run(source: str) -> str:
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<candidate>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


def test_a_class_called_once_becomes_functions_and_its_init_runs_where_it_was_made():
    [(name, program)] = applied(PREDICTOR, class_edits)
    assert name == "classes"
    assert "class" not in program and "self" not in program
    assert "def _predict_impl(tokens):" in program and "def predictor(tokens):" in program
    assert "    _predict = _predict_impl\n    label = predictor(tokens)" in program  # in the loop, as before
    assert run(program) == run(PREDICTOR)


def test_an_object_bound_to_a_name_keeps_its_state_in_globals():
    [(_, program)] = applied(TRAINER, class_edits)
    assert "class" not in program and "trainer" not in program
    assert "global steps" in program and "steps += 1" in program
    assert "lr = 0.5" in program  # the parameter the call gives, then the attribute set from it
    assert "def step(x):" in program and "print(step(i), steps)" in program
    assert run(program) == run(TRAINER) == "1.0 1\n2.0 2\n"


def test_a_member_whose_name_the_file_uses_elsewhere_is_renamed():
    [(_, program)] = applied(TRAINER, class_edits)
    assert "model_ = model" in program and "model_(x)" in program  # `model` is the function passed in


def test_classes_that_are_not_one_plain_object_are_left_alone():
    two_objects = PREDICTOR + "print(Predictor()(5))\n"
    subclass = PREDICTOR.replace("class Predictor:", "class Predictor(object):")
    passed_on = TRAINER + "print(trainer)\n"
    receiver_passed = PREDICTOR.replace("return tokens * 2", "return tokens * len([self])")
    dunder = PREDICTOR.replace("def _predict_impl", "def __repr__(self):\n        return ''\n\n    def _predict_impl")
    returns_early = TRAINER.replace("self.steps = 0", "self.steps = 0\n        return")
    in_function = PREDICTOR.replace("for tokens in range(3):", "def main():\n  for tokens in range(3):") + "main()\n"
    for source in (two_objects, subclass, passed_on, receiver_passed, dunder, returns_early, in_function):
        assert applied(source, class_edits) == [], source


def test_the_reducer_takes_a_wrapper_class_down_to_the_call_it_makes():
    result = Reducer(prints("0\n2\n4\n")).reduce(PREDICTOR)
    assert result.stats.passes.get("classes") == 1, result.stats.passes
    assert "class" not in result.source and "self" not in result.source, result.source


LOSS_MODULE = """\
import torch
from torch import nn


class WeightedLoss(nn.Module):
    def __init__(self, model, weights):
        super().__init__()
        self.model = model
        self.weights = weights

    def forward(self, x):
        return self.model(x) * self.weights


model = nn.Identity()
loss_fn = WeightedLoss(model, torch.full((2,), 3.0))
print(torch.compile(loss_fn, backend="eager")(torch.ones(2)).tolist())
"""


def test_a_module_made_for_one_object_becomes_a_function_compiled_in_its_place():
    [(_, program)] = applied(LOSS_MODULE, class_edits)
    assert "class" not in program and "super" not in program, program
    assert "torch.compile(weighted_loss" in program and "model_ = model" in program, program
    assert run(program) == run(LOSS_MODULE) == "[3.0, 3.0]\n"


def test_modules_exported_or_given_what_nn_module_gives_are_left_alone():
    exported = LOSS_MODULE.replace("torch.compile(loss_fn, backend=\"eager\")(torch.ones(2)).tolist()",
                                   "torch.export.export(loss_fn, (torch.ones(2),))")
    defines_call = LOSS_MODULE.replace("def forward(self, x)", "def __call__(self, x)")
    passed_on = LOSS_MODULE + "print(sum(1 for _ in loss_fn.parameters()))\n"
    for source in (exported, defines_call, passed_on):
        assert applied(source, class_edits) == [], source


def test_a_config_class_with_annotated_fields_becomes_names():
    """What a `@dataclass` config is once its decorator went: annotated fields read through one object."""
    config = ("class Config:\n    seed: int = 1\n    steps = 2\n\n\n"
              "def step(cfg):\n    return cfg.seed + cfg.steps\n\n\ncfg = Config()\nprint(step(cfg))\n")
    assert applied(config, class_edits) == []  # handed on as a value: not only read through itself
    read_through = config.replace("def step(cfg):\n    return cfg.seed + cfg.steps\n\n\n", "").replace(
        "print(step(cfg))", "print(cfg.seed + cfg.steps)")
    [(_, program)] = applied(read_through, class_edits)
    assert "class" not in program and "seed = 1" in program and run(program) == run(read_through) == "3\n"
    bare = read_through.replace("    steps = 2\n", "    steps: int\n")
    assert applied(bare, class_edits) == []  # `steps: int` alone gives the object nothing to read
