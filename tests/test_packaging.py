"""The wheel ships every package of the tree (a missing subpackage fails only on a fresh install)."""
import tomllib

from tests import paths


def test_every_package_of_the_tree_is_in_pyproject():
    listed = set(tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    in_tree = {".".join(init.parent.relative_to(paths.ROOT).parts)
               for top in ("bot", "runners") for init in (paths.ROOT / top).rglob("__init__.py")}
    assert in_tree <= listed, sorted(in_tree - listed)
