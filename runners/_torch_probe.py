"""Hooks on torch that the bootstrap installs inside a sandboxed run, before the script starts.

Standalone (stdlib and torch only; never imported by the trusted side). What a run asks for comes
in `TRIAGE_TORCH_PROBE` (JSON); what it found goes back in the bootstrap's report under "probe".

Switches (the ablation ladder re-runs a repro under each, without editing the user's text):
  backend      "eager" | "aot_eager" | "aot_eager_decomp_partition" | "inductor": the backend of
               every torch.compile call (a custom backend callable is replaced too)
  compiler     "off": torch.compile'd code runs eagerly (torch.compiler.set_stance("force_eager")),
               and stays so whatever stance the script sets itself; torch.export.export returns
               the module itself, and an AOTInductor package of it is that module (_export_eagerly)
  dynamic      false: every torch.compile call with dynamic=False
  fullgraph    false: every torch.compile call with fullgraph=False
Measurements (silent failures):
  compare      every call of a compiled function or module is shadowed by an eager call on deep
               copies of its inputs (and of the module), with the RNG state of the compiled call;
               outputs are compared the way torch's accuracy minifier does (torch._dynamo.utils.same,
               tolerance 1e-3, against an fp64 reference where the call is small), and the largest
               absolute and relative differences are kept
  time         the same shadow calls are timed, and a call made only once is repeated on copies,
               so compiled and eager per-call medians and the first call (compile) time are known
  counters     at exit: Dynamo's frame, graph and graph-break counters and its recorded guard
               failures (recompiles) per function, with the recompile limit in force
  modules      for each nn.Module subclass the script defines, what its first construction and its
               first call were given, as plain specs (a tensor's shape, dtype, device and the dims
               marked dynamic; numbers, strings, dataclasses of the script), so the reducer can
               build that module alone.
               Nothing is compiled or exported: the first call of a torch.compile'd callable, or
               torch.export.export's example inputs, run eagerly and the script then stops (exit 0;
               an AOTInductor repro would otherwise pay its whole C++ build for the record). At that
               point each record also gets `at_entry`: the module's training mode and grad mode.
  replay       with `modules`: N (at most 16). The first compiled module of the script that is
               called runs on eagerly, and its first N calls are recorded as `entry` (its class and
               each call's arguments), for a failure that shows across calls (recompiles); the
               script stops after the Nth
A hostile script can tamper with all of this (it runs in the same process); the trusted side
treats the probe's numbers as evidence of a silent failure, never as proof of a crash.
"""
import copy
import functools
import json
import os
import statistics
import sys
import time

ENV = "TRIAGE_TORCH_PROBE"
TOLERANCE = 1e-3  # torch._dynamo.config.repro_tolerance, what the accuracy minifier compares at
FP64_MAX_ELEMENTS = 4_000_000  # an fp64 reference only for calls this small (inputs plus parameters)
MAX_RECORDED_CALLS = 50
MAX_RECORDED_MODULES = 32
MAX_REPLAYED_CALLS = 16
MAX_SPEC_ITEMS = 16
MAX_SPEC_DEPTH = 3
TIMING_REPEATS = 5

_report = {"calls": [], "errors": []}
_replayed = {}  # "target": the compiled callable a `replay` run records the calls of
_config = {}


def config_from_env():
    try:
        return json.loads(os.environ.get(ENV, "") or "{}")
    except ValueError:
        return {}


def install(config):
    """Apply the switches and wrap torch.compile; returns the dict the report is written from."""
    global _config
    _config = dict(config)
    _report["config"] = _config
    if not _config:
        return _report
    import torch

    if _config.get("compiler") == "off":
        _hold_stance(torch, "force_eager")
        _export_eagerly(torch)
    if _config.get("modules"):
        _record_modules(torch)
        return _report
    original = torch.compile
    if getattr(original, "_pt2_triage_probe", False):
        return _report

    @functools.wraps(original)
    def compile_hook(model=None, **kwargs):
        kwargs = _overridden(kwargs)
        if model is None:
            decorate = original(**kwargs)
            return lambda fn: _shadowed(fn, decorate(fn))
        return _shadowed(model, original(model, **kwargs))

    compile_hook._pt2_triage_probe = True
    torch.compile = compile_hook
    return _report


def _hold_stance(torch, stance):
    """Set the compiler's stance, and make every later `set_stance` (function, context manager or
    decorator; `torch.compiler.set_stance` calls `torch._dynamo.set_stance`) set that one instead:
    a script's own `set_stance("fail_on_recompile")` turned the compiler back on, and its recompile
    error was read as eager's own."""
    import torch._dynamo

    keep = torch._dynamo.set_stance
    torch.compiler.set_stance(stance)
    torch._dynamo.set_stance = lambda *args, **kwargs: keep(stance)


def _record_modules(torch):
    """`modules`: every nn.Module subclass defined from now on in __main__ has its `__init__` wrapped
    to remember the outermost construction's arguments, and a global pre-forward hook writes a
    module's record on its class's first call (eager calls: run this with the compiler off)."""
    records = _report.setdefault("modules", [])
    constructed = {}  # id(instance) -> (args, kwargs) of its outermost __init__
    recorded = set()
    first_instances = []  # (record, instance): the state each was in when the entry point was reached
    inherited = torch.nn.Module.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kwargs):
        if inherited is not None:
            inherited.__func__(cls, **kwargs)
        else:
            super(torch.nn.Module, cls).__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if cls.__module__ == "__main__" and init is not None:
            cls.__init__ = _remembering_init(init, constructed)

    def pre_forward(module, args):
        cls = type(module)
        if cls.__module__ != "__main__" or cls in recorded or len(recorded) >= MAX_RECORDED_MODULES:
            return None
        recorded.add(cls)
        init_args, init_kwargs = constructed.get(id(module), ((), {}))
        records.append({"class": cls.__qualname__,
                        "init": [_spec(a) for a in init_args[:MAX_SPEC_ITEMS]],
                        "init_kw": {str(k): _spec(v) for k, v in list(init_kwargs.items())[:MAX_SPEC_ITEMS]},
                        "call": [_spec(a) for a in args[:MAX_SPEC_ITEMS]]})
        first_instances.append((records[-1], module))
        return None

    def note_entry_state():
        """At the entry point: whether each recorded module was in training mode, and whether grad
        was on (`model.eval()` and `torch.no_grad()` before a compiled call change what it compiles)."""
        grad = bool(torch.is_grad_enabled())
        for record, module in first_instances:
            record["at_entry"] = {"training": bool(module.training), "grad": grad}

    torch.nn.Module.__init_subclass__ = classmethod(init_subclass)
    torch.nn.modules.module.register_module_forward_pre_hook(pre_forward)
    replay = _config.get("replay")
    replay = min(int(replay), MAX_REPLAYED_CALLS) if type(replay) is int and replay > 0 else 0
    _stop_at_entry_points(torch, note_entry_state, replay)


class _Recorded(SystemExit):
    """Raised after the first eager call a `modules` run makes in place of compiled code."""

    def __init__(self):
        super().__init__(0)


class _EagerOnce:
    """What torch.compile returns in a `modules` run: the callable itself, run eagerly once, then the
    script stops. Attributes (`.train()`, `.parameters()`) go to the callable. With `replay`, the
    first compiled module called keeps running eagerly and its calls are recorded (`entry`), until
    that many have been (compiled functions and torch's own modules run on, unrecorded)."""

    def __init__(self, target, at_entry, replay=0):
        self._target = target
        self._at_entry = at_entry
        self._replay = replay

    def __call__(self, *args, **kwargs):
        if not self._replay:
            self._target(*args, **kwargs)
            self._at_entry()
            raise _Recorded()
        name = _main_module_name(self._target)
        if name is None or _replayed.setdefault("target", self) is not self:
            return self._target(*args, **kwargs)  # a function, torch's module, or another module: not replayed
        entry = _report.setdefault("entry", {"class": name, "calls": []})
        entry["calls"].append([_spec(a) for a in args[:MAX_SPEC_ITEMS]])
        result = self._target(*args, **kwargs)
        if len(entry["calls"]) == 1:
            self._at_entry()  # after the call: its modules' records exist from their first forward
        if len(entry["calls"]) >= self._replay:
            raise _Recorded()
        return result

    def __getattr__(self, name):
        return getattr(self._target, name)


def _main_module_name(target):
    """The class name of an nn.Module the script defines, else None (a function, a torch module)."""
    import torch

    cls = type(target)
    return cls.__qualname__ if isinstance(target, torch.nn.Module) and cls.__module__ == "__main__" else None


class _EagerProgram:
    """What torch.export.export returns with the compiler off: the module itself, run eagerly. It
    answers the calls a serving script makes of an ExportedProgram (`module()`,
    `run_decompositions()`) and of the AOTInductor package built from it; anything else is an
    AttributeError, and such a script is simply not one the compiler-off run can tell apart."""

    def __init__(self, mod):
        self._mod = mod

    def module(self, *args, **kwargs):
        return self._mod

    def run_decompositions(self, *args, **kwargs):
        return self

    def __call__(self, *args, **kwargs):
        return self._mod(*args, **kwargs)


def _export_eagerly(torch):
    """The compiler off for torch.export and AOTInductor, as the stance is for torch.compile: export
    traces nothing and returns the module, an AOTInductor package of it is that module again (no
    C++ build, no file), and loading it gives the module back. A script whose own check fails only
    with them on then shows that the failure is theirs (an AOTInductor package that ignores a new
    value of an input export fixed), where before its run with the compiler "off" was no run at all."""
    import torch.export

    def export(mod, args=(), kwargs=None, **options):
        return _EagerProgram(mod)

    torch.export.export = export
    if hasattr(torch.export, "export_for_training"):
        torch.export.export_for_training = export
    import torch._inductor  # already imported with torch._dynamo, which the stance needs

    _eager_packages(torch._inductor)


def _eager_packages(inductor):
    """AOTInductor's package of an _EagerProgram is the program itself; any other goes to the real one."""
    packages = {}
    build, load = inductor.aoti_compile_and_package, inductor.aoti_load_package

    def compile_and_package(program, *args, package_path=None, **kwargs):
        if not isinstance(program, _EagerProgram):
            return build(program, *args, package_path=package_path, **kwargs)
        path = str(package_path or f"pt2-triage-eager-{len(packages)}.pt2")
        packages[os.fspath(path)] = program
        return path

    def load_package(path, *args, **kwargs):
        program = packages.get(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
        return program if program is not None else load(path, *args, **kwargs)

    inductor.aoti_compile_and_package = compile_and_package
    inductor.aoti_load_package = load_package


def _stop_at_entry_points(torch, at_entry, replay=0):
    import torch.export

    def compile_once(model=None, *args, **kwargs):
        if model is not None:
            return _EagerOnce(model, at_entry, replay)
        return lambda fn: _EagerOnce(fn, at_entry, replay)

    def export_once(mod, args=(), kwargs=None, **options):
        mod(*args, **(kwargs or {}))
        at_entry()
        raise _Recorded()

    torch.compile = compile_once
    torch.export.export = export_once


def _remembering_init(init, constructed):
    @functools.wraps(init)
    def remembering(self, *args, **kwargs):
        constructed.setdefault(id(self), (args, kwargs))  # a subclass's __init__ runs before its base's
        return init(self, *args, **kwargs)
    return remembering


def _spec(value, depth=0):
    """A plain, JSON-able description of an argument; {"other": type name} for what has none."""
    import dataclasses

    import torch

    if isinstance(value, torch.Tensor):
        spec = {"tensor": [int(n) for n in value.shape], "dtype": str(value.dtype).removeprefix("torch."),
                "device": value.device.type, "grad": bool(value.requires_grad)}
        marked = getattr(value, "_dynamo_dynamic_indices", None)  # torch._dynamo.mark_dynamic's dims
        if marked:
            spec["dynamic"] = sorted(int(d) for d in marked)
        return spec
    if isinstance(value, torch.dtype):
        return {"torch_dtype": str(value).removeprefix("torch.")}
    if value is None or type(value) in (bool, int, float) or (type(value) is str and len(value) <= 200):
        return {"value": value}
    if type(value) in (tuple, list) and depth < MAX_SPEC_DEPTH and len(value) <= MAX_SPEC_ITEMS:
        return {"seq": type(value).__name__, "items": [_spec(v, depth + 1) for v in value]}
    if (type(value) is dict and depth < MAX_SPEC_DEPTH and len(value) <= MAX_SPEC_ITEMS
            and all(type(k) is str for k in value)):
        return {"dict": {k: _spec(v, depth + 1) for k, v in value.items()}}
    if (dataclasses.is_dataclass(value) and not isinstance(value, type) and depth < MAX_SPEC_DEPTH
            and type(value).__module__ == "__main__"):
        return {"dataclass": type(value).__qualname__,
                "fields": {f.name: _spec(getattr(value, f.name, None), depth + 1)
                           for f in dataclasses.fields(value)[:MAX_SPEC_ITEMS] if f.init}}
    return {"other": type(value).__name__}


def _overridden(kwargs):
    kwargs = dict(kwargs)
    if _config.get("backend"):
        kwargs["backend"] = _config["backend"]
        if _config["backend"] != "inductor":
            kwargs.pop("mode", None)  # modes and options are Inductor's; other backends refuse them
            kwargs.pop("options", None)
    if _config.get("dynamic") is False:
        kwargs["dynamic"] = False
    if _config.get("fullgraph") is False:
        kwargs["fullgraph"] = False
    return kwargs


def _shadowed(eager, compiled):
    """`compiled`, made to also run `eager` on copies when comparing or timing."""
    if not (_config.get("compare") or _config.get("time")):
        return compiled
    import torch

    if isinstance(compiled, torch.nn.Module):
        base = type(compiled)
        compiled.__class__ = type(base.__name__, (base,), {"__call__": lambda self, *a, **k: _call(self, eager, base, a, k)})
        return compiled

    @functools.wraps(eager)
    def call(*args, **kwargs):
        return _call(compiled, eager, None, args, kwargs)

    return call


def _call(compiled, eager, module_base, args, kwargs):
    """One call of a compiled callable, shadowed by the eager one on copies of everything it touches."""
    import torch

    index = len(_report["calls"])
    _report["calls_total"] = _report.get("calls_total", 0) + 1  # every call, past the recorded ones too
    if module_base is not None:
        def run_compiled(a, k):
            return module_base.__call__(compiled, *a, **k)
    else:
        def run_compiled(a, k):
            return compiled(*a, **k)
    if index >= MAX_RECORDED_CALLS:
        return run_compiled(args, kwargs)
    try:
        snapshot = (copy.deepcopy(eager) if isinstance(eager, torch.nn.Module) else eager, copy.deepcopy((args, kwargs)))
    except Exception as exc:  # noqa: BLE001 - an input that cannot be copied: no shadow for this call
        _report["errors"].append(f"call {index}: inputs not copyable ({type(exc).__name__})")
        return run_compiled(args, kwargs)
    rng = _rng_state()
    started = _now()
    result = run_compiled(args, kwargs)
    compiled_s = _now() - started
    record = {"call": index, "compiled_s": round(compiled_s, 6)}
    try:
        _set_rng_state(rng)
        shadow, (shadow_args, shadow_kwargs) = snapshot
        started = _now()
        reference = shadow(*shadow_args, **shadow_kwargs)
        record["eager_s"] = round(_now() - started, 6)
        if _config.get("compare"):
            record.update(_compare(reference, result, shadow, shadow_args, shadow_kwargs, rng))
        if _config.get("time") and index == 0:
            record.update(_repeat_timings(run_compiled, shadow, args, kwargs))
    except Exception as exc:  # noqa: BLE001 - the shadow failing is a finding, not our crash
        record["shadow_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    _report["calls"].append(record)
    return result


def _compare(reference, result, shadow, args, kwargs, rng):
    import torch
    from torch._dynamo.utils import same

    fp64 = None
    small = _elements((args, kwargs)) + _elements(list(shadow.parameters()) if isinstance(shadow, torch.nn.Module) else []) \
        <= FP64_MAX_ELEMENTS
    # casting to float64 copies each input apart: inputs that are views of one base (the aliasing a
    # compiler must honour) would stop aliasing, and the "reference" would agree with a wrong result
    if small and not _aliased((args, kwargs)):
        try:
            _set_rng_state(rng)
            fp64_args, fp64_kwargs = _to_fp64((args, kwargs))
            fp64 = _to_fp64(shadow)(*fp64_args, **fp64_kwargs)
        except Exception:  # noqa: BLE001 - ops without a float64 kernel: compare without the reference
            fp64 = None
    quiet = {"tol": TOLERANCE, "equal_nan": True, "log_error": lambda *a, **k: None}
    within = bool(same(reference, result, **quiet))  # eager itself as the reference
    ok = within or (fp64 is not None and bool(same(reference, result, fp64_ref=fp64, **quiet)))
    max_abs, max_rel = _differences(reference, result)
    return {"same": ok, "within_tolerance": within, "max_abs": max_abs, "max_rel": max_rel,
            "fp64_reference": fp64 is not None}


def _aliased(value) -> bool:
    """Whether two of the tensors in `value` share storage (views of one base)."""
    seen = set()
    for tensor in _tensors(value):
        try:
            key = tensor.untyped_storage().data_ptr()
        except Exception:  # noqa: BLE001 - a tensor without storage (fake, sparse): no aliasing to keep
            continue
        if key and key in seen:
            return True
        seen.add(key)
    return False


def _repeat_timings(run_compiled, eager, args, kwargs):
    """Warm per-call times: the compiled and the eager callable each run again on copies."""
    compiled_times, eager_times = [], []
    for _ in range(TIMING_REPEATS):
        a, k = copy.deepcopy((args, kwargs))
        started = _now()
        run_compiled(a, k)
        compiled_times.append(_now() - started)
        a, k = copy.deepcopy((args, kwargs))
        started = _now()
        eager(*a, **k)
        eager_times.append(_now() - started)
    return {"compiled_median_s": round(statistics.median(compiled_times), 6),
            "eager_median_s": round(statistics.median(eager_times), 6)}


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _elements(value):
    return sum(t.numel() for t in _tensors(value))


def _to_fp64(value):
    import torch

    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value).double()
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, dict):
        return {k: _to_fp64(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_fp64(v) for v in value)
    return value


def _differences(reference, result):
    """The largest absolute and relative differences over the floating-point tensors of two outputs."""
    import torch

    max_abs = max_rel = 0.0
    for ref, res in zip(_tensors(reference), _tensors(result)):
        if not (ref.is_floating_point() and res.is_floating_point()) or ref.shape != res.shape:
            continue
        ref64, res64 = ref.detach().double(), res.detach().double()
        agree = (ref64 == res64) | (ref64.isnan() & res64.isnan())  # equal infinities, NaN where both are NaN
        diff = torch.where(agree, torch.zeros_like(ref64), torch.nan_to_num((ref64 - res64).abs(), nan=float("inf")))
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
            relative = torch.nan_to_num(diff / ref64.abs().clamp_min(1e-12), nan=float("inf"))
            max_rel = max(max_rel, float(torch.where(agree, torch.zeros_like(relative), relative).max()))
    return max_abs, max_rel


def _rng_state():
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state):
    import torch

    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _now():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()


def counters():
    """Dynamo's counters and recompiles, read at the end of the run."""
    torch = sys.modules.get("torch")
    if torch is None or "torch._dynamo" not in sys.modules:
        return {}
    from torch._dynamo import utils

    failures = {getattr(code, "co_name", str(code)): [str(r)[:300] for r in reasons][:20]
                for code, reasons in list(utils.guard_failures.items())[:50]}
    config = torch._dynamo.config
    return {
        "frames": dict(utils.counters.get("frames", {})),
        "stats": dict(utils.counters.get("stats", {})),
        "graph_breaks": sum(utils.counters.get("graph_break", {}).values()),
        "graph_break_reasons": [str(reason).split("\n", 1)[0][:200] for reason in list(utils.counters.get("graph_break", {}))[:5]],
        "graph_break_counts": [[str(reason).split("\n", 1)[0][:200], int(count)]
                               for reason, count in list(utils.counters.get("graph_break", {}).items())[:50]],
        "recompiles": {name: len(reasons) for name, reasons in failures.items()},
        "guard_failures": failures,
        "recompile_limit": getattr(config, "recompile_limit", getattr(config, "cache_size_limit", None)),
    }


def finish():
    """The probe's report, for the bootstrap to send (counters only when asked)."""
    if _config.get("counters"):
        try:
            _report["counters"] = counters()
        except Exception as exc:  # noqa: BLE001
            _report["errors"].append(f"counters: {type(exc).__name__}")
    return _report
