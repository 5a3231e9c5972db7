"""Inductor's ISA test libraries are built once per machine and every cold run gets its own copy."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from runners import inductor_seed
from runners.sandbox import RunSpec, run

LIST_SEEDS = """\
import hashlib, os
from torch._inductor.runtime.cache_dir_utils import cache_dir
for sub in sorted(os.listdir(cache_dir())):
    for name in sorted(os.listdir(os.path.join(cache_dir(), sub))):
        if name.endswith(".so"):
            path = os.path.join(cache_dir(), sub, name)
            print(sub + "/" + name, hashlib.sha256(open(path, "rb").read()).hexdigest())
            open(path, "ab").write(b"tampered")
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(inductor_seed.STORE_ENV, str(tmp_path / "store"))
    monkeypatch.setattr(inductor_seed, "_known", {})
    return tmp_path / "store"


@pytest.mark.slow
def test_the_isa_probes_are_built_once_and_every_cold_run_gets_a_copy_it_cannot_change_for_others(store):
    files = inductor_seed.seed_files()
    libraries = {name: hashlib.sha256(content).hexdigest() for name, content in files.items() if name.endswith(".so")}
    assert libraries, "this machine's compiler built no ISA test library"
    kept = inductor_seed.seed_dir()
    assert kept is not None and kept.parent == store

    first, second = run(RunSpec(script=LIST_SEEDS)), run(RunSpec(script=LIST_SEEDS))  # each appends to its copy
    assert first.status == second.status == "ok", first.stderr[-2000:]
    seen = dict(line.split() for line in first.stdout.splitlines())
    assert seen == libraries == dict(line.split() for line in second.stdout.splitlines())
    assert {name: hashlib.sha256((kept / name).read_bytes()).hexdigest() for name in libraries} == libraries


def test_the_key_changes_with_the_interpreter_and_needs_no_torch_import(store):
    assert inductor_seed.seed_key(sys.executable) == inductor_seed.seed_key(sys.executable)
    assert inductor_seed.seed_key(sys.executable) != inductor_seed.seed_key("/usr/bin/python3")


def test_an_interpreter_that_cannot_build_them_gives_no_seed_and_no_store(store, tmp_path):
    no_torch = tmp_path / "bin" / "python"
    no_torch.parent.mkdir()
    no_torch.write_text("#!/bin/sh\nexit 3\n")
    no_torch.chmod(0o755)
    assert inductor_seed.seed_files(str(no_torch)) == {}
    assert inductor_seed.seed_dir(str(no_torch)) is None
    assert not [p for p in store.glob("*") if p.is_dir() and not p.name.startswith(".")]


def test_a_run_that_will_not_wait_starts_the_build_and_a_run_that_waits_gets_it(store, tmp_path, monkeypatch):
    """A GPU run takes no seed rather than wait for the first build (about 40 s on a fresh H200
    host); the build goes on in the background, and the next run that waits gets its libraries."""
    monkeypatch.setattr(inductor_seed, "_building", set())
    slow = tmp_path / "bin" / "python"
    slow.parent.mkdir()
    slow.write_text('#!/bin/sh\nsleep 1\nmkdir -p "$TORCHINDUCTOR_CACHE_DIR/ab"\n'
                    'printf lib > "$TORCHINDUCTOR_CACHE_DIR/ab/cx.so"\n')
    slow.chmod(0o755)
    assert inductor_seed.seed_files(str(slow), wait=False) == {}
    assert inductor_seed.seed_files(str(slow)) == {"ab/cx.so": b"lib"}  # blocks on the store's lock until built
    assert inductor_seed.seed_files(str(slow), wait=False) == {"ab/cx.so": b"lib"}


def test_planting_never_writes_through_a_link(store, tmp_path):
    from runners import safefs
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "run"
    (root / "inductor_cache").mkdir(parents=True)
    (root / "inductor_cache" / "ab").symlink_to(outside)
    fd = safefs.open_dir(root)
    try:
        with pytest.raises(OSError):
            inductor_seed.plant(fd, "inductor_cache", {"ab/cx.so": b"lib"}, None)
        inductor_seed.plant(fd, "inductor_cache", {"cd/cy.so": b"lib"}, None)
    finally:
        import os
        os.close(fd)
    assert list(outside.iterdir()) == []
    assert (root / "inductor_cache" / "cd" / "cy.so").read_bytes() == b"lib"
    assert Path(inductor_seed.store_root()) == store
