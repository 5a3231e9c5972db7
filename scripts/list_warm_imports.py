"""List the modules a warm run would import on its own, so the warm server imports them once
(writes runners/_warm_imports.txt).

Why: a forked warm run starts with torch, Dynamo and Inductor's front end imported, but torch
imports much of itself lazily, at the first compile, export or graph break: a warm run of a
fullgraph graph break imported 26 modules (0.1 s of its 0.3 s), an Inductor compile 131 (0.28 s
of 0.75 s with its kernel cached), an export 26 (0.07 s). A minimizer's search makes hundreds of
such runs, and paid that import each time.

How: our own small scripts, one per kind of PT2 work (Inductor forward and backward, a graph break
under fullgraph, dynamic shapes and a recompile, `torch.cond`, `torch.export` passing and
failing, AOTInductor), each run in a fork of a process that did exactly the warm server's
preload; the names of the installed modules each imported (never the generated kernel modules,
which live in the cache) go into the list, sorted. Re-run after a torch upgrade: a name this torch
lacks is skipped by the server, one it newly imports lazily is just imported by each run, so a
stale list costs time, never faithfulness.

    python scripts/list_warm_imports.py [--check]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runners" / "_warm_imports.txt"
sys.path.insert(0, str(ROOT / "runners"))

HEADER = ("# Modules the warm server imports after torch (runners/_worker_preload.py), written by\n"
          "# scripts/list_warm_imports.py: what torch imports lazily at a run's first compile or export.\n")

SCRIPTS = {
    "inductor_train": """
import torch
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(lambda x: model(x).sum())
loss = step(torch.randn(4, 8))
loss.backward()
opt.step()
""",
    "graph_break_fullgraph": """
import torch
@torch.compile(fullgraph=True, backend="eager")
def f(x):
    print("side effect")
    return x + 1
f(torch.randn(3))
""",
    "data_dependent_branch": """
import torch
@torch.compile(backend="aot_eager")
def f(x):
    if x.sum() > 0:
        return x.item()
    return x * 2
f(torch.randn(3))
""",
    "dynamic_recompile": """
import torch
torch._dynamo.config.cache_size_limit = 2
f = torch.compile(lambda x, n: x * n, backend="eager")
x = torch.randn(5)
torch._dynamo.mark_dynamic(x, 0)
for n in range(4):
    f(x, n)
f(torch.randn(7, 2), 1.5)
""",
    "cond": """
import torch
@torch.compile(backend="eager", fullgraph=True)
def f(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
f(torch.randn(3))
""",
    "export": """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x[x > 0].numel() > 1 and x.sum()
batch = torch.export.Dim("batch")
torch.export.export(torch.nn.Linear(4, 2), (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
torch.export.export(M(), (torch.randn(3),))
""",
    "aoti": """
import torch
exported = torch.export.export(torch.nn.Linear(4, 2), (torch.randn(3, 4),))
path = torch._inductor.aoti_compile_and_package(exported)
torch._inductor.aoti_load_package(path)(torch.randn(3, 4))
""",
}


def installed(module) -> bool:
    """Installed code (the interpreter's library or site-packages), not a generated kernel module."""
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    roots = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return any(os.path.realpath(origin).startswith(root + os.sep) for root in roots)


def imported_by(source: str) -> set[str]:
    """The installed modules a fork of the preloaded process imports running `source`."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        before = set(sys.modules)
        try:
            with open(os.devnull, "w") as quiet:
                os.dup2(quiet.fileno(), 1), os.dup2(quiet.fileno(), 2)
            exec(compile(source, "repro.py", "exec"), {"__name__": "__main__"})
        except BaseException:  # noqa: BLE001 - several of these scripts fail on purpose
            pass
        names = sorted(name for name in set(sys.modules) - before if installed(sys.modules[name]))
        os.write(write, json.dumps(names).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(child, 0)
    return set(json.loads(b"".join(chunks) or b"[]"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="say whether the committed list is current; write nothing")
    args = parser.parse_args()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="warm-imports-cache-")
    from _worker_preload import preload

    preload(("torch",))
    names: set[str] = set()
    for name, source in SCRIPTS.items():
        found = imported_by(source)
        print(f"{name}: {len(found)} modules", file=sys.stderr)
        names |= found
    text = HEADER + "".join(f"{name}\n" for name in sorted(names))
    if args.check:
        current = OUT.exists() and OUT.read_text() == text
        print(f"{OUT.relative_to(ROOT)} is {'current' if current else 'stale'}")
        return 0 if current else 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(names)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
