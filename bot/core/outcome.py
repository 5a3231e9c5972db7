"""What a run showed, and why a repro that did not fail did not (pure: run values in, verdicts out).

A failure is what the launcher saw: a non-zero exit, a signal, an uncaught exception reported by the
bootstrap. Text a run printed (warnings, TORCH_LOGS lines, a traceback printed by a handled
exception, or one the script forged) is evidence, never a reproduction. Silent failures are measured
by the in-run probe (compiled against eager on the same inputs, timings, recompiles) and judged here
against the thresholds of rules/reproduction.yaml (the Ruleset's `reproduction` table, passed in).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Sequence

from bot.core.markdown import quoted
from bot.core.records import Classification
from bot.core.signature import short_type
from bot.core.tracebacks import CUT_OFF_TYPE

MAX_RENDERED_FRAMES = 40


def launcher_failed(result: Any) -> bool:
    """The script's process exited non-zero or died of a signal (what the launcher saw)."""
    return bool(result.signal) or (result.exit_code not in (0, None))


def render_uncaught(exception: Mapping | None) -> str:
    """The bootstrap's uncaught exception as a CPython traceback (root cause first), for the classifier."""
    if not exception:
        return ""
    chain, seen, current = [], 0, exception
    while current and seen < 8:
        chain.append(current)
        linked = current.get("cause") or (None if current.get("suppress_context") else current.get("context"))
        current, seen = linked, seen + 1
    blocks = []
    for depth, item in enumerate(reversed(chain)):
        if depth:
            cause = item.get("cause") is not None  # how this one is linked to the one before it
            blocks.append("The above exception was the direct cause of the following exception:\n" if cause
                          else "During handling of the above exception, another exception occurred:\n")
        lines = ["Traceback (most recent call last):"]
        for path, line, function in list(item.get("frames") or [])[-MAX_RENDERED_FRAMES:]:
            lines.append(f'  File "{path}", line {line}, in {function}')
        if item.get("frames") and item.get("raise_site"):
            lines.append(f'    {item["raise_site"]}')  # the statement that raised, as CPython prints it
        message = str(item.get("message") or "")
        kind = str(item.get("type") or "Exception").removeprefix("builtins.")
        lines.append(f"{kind}: {message}" if message else kind)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def evidence_text(result: Any) -> str:
    """What the classifier reads of a run: its output, then how the launcher saw it end. The
    bootstrap's exception comes last, so that the final error is the one that ended the process,
    whatever the script printed before it."""
    ending = f"\n[pt2-triage] process terminated by {result.signal}\n" if result.signal else ""
    text = f"{result.stdout}\n{result.stderr}{ending}"
    uncaught = getattr(result, "uncaught_exception", None)
    if uncaught and launcher_failed(result):
        text += "\n[pt2-triage] the launcher's record of the exception that ended the run:\n" + render_uncaught(uncaught)
    return text


# --- silent failures ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SilentFinding:
    """One silent-failure measurement: what was measured and whether it is a reproduction."""

    kind: str  # the category it measures (a judge's name until the caller names the category)
    reproduced: bool
    summary: str
    numbers: Mapping[str, float] = field(default_factory=dict)


def silent_findings(probe: Mapping | None, checks: tuple[tuple[str, str], ...], rules: Mapping) -> tuple[SilentFinding, ...]:
    """The probe's measurements judged for each (category, judge) asked for; `rules` is the
    ruleset's reproduction table (its `silent` thresholds are keyed by judge)."""
    if not probe:
        return ()
    found = []
    for category, judge in checks:
        finding = JUDGES[judge](probe, rules["silent"][judge])
        if finding is not None:
            found.append(replace(finding, kind=category))
    return tuple(found)


def _accuracy(probe: Mapping, rule: Mapping) -> SilentFinding | None:
    compared = [c for c in probe.get("calls", ()) if "same" in c]
    if not compared:
        return None
    differing = [c for c in compared if not c["same"]]
    worst = max(compared, key=lambda c: c.get("max_abs", 0.0))
    numbers = {"calls_compared": len(compared), "calls_differing": len(differing),
               "max_abs": worst.get("max_abs", 0.0), "max_rel": worst.get("max_rel", 0.0)}
    if differing:
        worst = max(differing, key=lambda c: c.get("max_abs", 0.0))
        numbers.update(max_abs=worst.get("max_abs", 0.0), max_rel=worst.get("max_rel", 0.0))
        reference = " against an fp64 reference" if worst.get("fp64_reference") else ""
        summary = (f"compiled and eager differ on {len(differing)} of {len(compared)} calls{reference}: "
                   f"max abs error {numbers['max_abs']:.3g}, max rel error {numbers['max_rel']:.3g} "
                   f"(tolerance {rule['tolerance']:g})")
        return SilentFinding("compare", True, summary, numbers)
    rescued = [c for c in compared if c.get("within_tolerance") is False]
    if rescued:  # torch's accuracy check: a result as close as eager's to float64 is not a compiler error
        worst = max(rescued, key=lambda c: c.get("max_abs", 0.0))
        return SilentFinding("compare", False, f"compiled differs from eager on {len(rescued)} of {len(compared)} calls "
                             f"(max abs difference {worst.get('max_abs', 0.0):.3g}) but is as close as eager to an "
                             "fp64 reference: within torch's accuracy check, so not counted as a compiler error", numbers)
    return SilentFinding("compare", False, f"compiled matches eager on all {len(compared)} calls "
                         f"(max abs difference {numbers['max_abs']:.3g})", numbers)


def _performance(probe: Mapping, rule: Mapping) -> SilentFinding | None:
    timed = [c for c in probe.get("calls", ()) if "compiled_median_s" in c]
    first = next(iter(probe.get("calls", ())), None)
    if not timed or first is None:
        return None
    compiled, eager = timed[0]["compiled_median_s"], timed[0]["eager_median_s"]
    compile_s = max(0.0, first.get("compiled_s", 0.0) - compiled)
    numbers = {"compiled_median_s": compiled, "eager_median_s": eager, "first_call_s": first.get("compiled_s", 0.0),
               "compile_s": round(compile_s, 3)}
    slower = compiled > eager * rule["slowdown_ratio"] and compiled - eager > rule["min_difference_s"]
    long_compile = compile_s > rule["compile_time_s"]
    ratio = compiled / eager if eager else float("inf")
    summary = (f"per call: compiled {compiled * 1e3:.3g} ms, eager {eager * 1e3:.3g} ms ({ratio:.2f}x); "
               f"first call (compile) {numbers['first_call_s']:.1f} s")
    later_slower, later = _later_calls(probe.get("calls", ()), rule)
    if later:
        numbers.update(later)
        summary += (f"; the script's {later['later_calls']} calls after the first: compiled {later['later_compiled_s']:.3g} s, "
                    f"eager {later['later_eager_s']:.3g} s")
    return SilentFinding("timing", slower or long_compile or later_slower, summary, numbers)


def _later_calls(calls: Sequence[Mapping], rule: Mapping) -> tuple[bool, dict]:
    """The script's own calls after the first, as it made them (recompiles included), against their
    eager shadows: a compiled function that recompiles on every call is fast once warm and slow as
    used (fresh_issues_12's decoder with a growing cache under dynamic=False)."""
    timed = [c for c in calls[1:] if isinstance(c.get("compiled_s"), (int, float)) and isinstance(c.get("eager_s"), (int, float))]
    if len(timed) < 2:
        return False, {}
    compiled, eager = sum(c["compiled_s"] for c in timed), sum(c["eager_s"] for c in timed)
    slower = compiled > eager * rule["slowdown_ratio"] and compiled - eager > rule["min_difference_s"] * len(timed)
    return slower, {"later_calls": len(timed), "later_compiled_s": round(compiled, 6), "later_eager_s": round(eager, 6)}


def _recompilation(probe: Mapping, rule: Mapping) -> SilentFinding | None:
    counters = probe.get("counters")
    if not counters:
        return None
    recompiles = counters.get("recompiles") or {}
    limit = counters.get("recompile_limit") or 8
    # the calls of the compiled function the probe saw (Dynamo's `calls_captured` counts the ops in its
    # graphs, not calls); without them only the limit decides
    calls = probe.get("calls_total") or len(probe.get("calls", ())) or None
    worst_name, worst = max(recompiles.items(), key=lambda item: item[1], default=(None, 0))
    numbers = {"recompiles": worst, "limit": limit, "frames": counters.get("frames", {}).get("total", 0),
               "graph_breaks": counters.get("graph_breaks", 0)}
    hit_limit = worst + 1 >= limit
    every_call = calls is not None and worst >= rule["min_recompiles"] and worst >= rule["every_call_ratio"] * (calls - 1)
    if worst_name is None:
        return SilentFinding("recompiles", False, "no recompiles", numbers)
    reasons = (counters.get("guard_failures") or {}).get(worst_name) or []
    first_reason = str(reasons[0]).split("\n", 1)[0] if reasons else "no guard failure recorded"
    summary = (f"{quoted(worst_name, 120)} recompiled {worst} time(s) (limit {limit}); first failing guard: "
               f"{quoted(first_reason, 200) if reasons else first_reason}")
    return SilentFinding("recompiles", hit_limit or every_call, summary, numbers)


def _graph_breaks(probe: Mapping, rule: Mapping) -> SilentFinding | None:
    counters = probe.get("counters")
    if not counters:
        return None
    count, reasons, deliberate = _counted_breaks(counters, rule.get("deliberate", ()))
    numbers = {"graph_breaks": count, "deliberate_graph_breaks": deliberate}
    if count < rule["min_graph_breaks"]:
        asked = f" ({deliberate} the script asks for: graph_break() or a disabled function)" if deliberate else ""
        return SilentFinding("graph_breaks", False, "no graph break" + asked, numbers)
    listed = "; ".join(quoted(r, 200) for r in reasons[:3])
    return SilentFinding("graph_breaks", True, f"{count} graph break(s) counted by Dynamo" + (f": {listed}" if listed else ""),
                         numbers)


def _counted_breaks(counters: Mapping, deliberate: Sequence[str]) -> tuple[int, list[str], int]:
    """(breaks that count, their reasons, breaks the script asked for). A reason matching a
    `deliberate` pattern (an explicit `torch._dynamo.graph_break()`, a `torch.compiler.disable`d
    function) is what the user wrote, not a failure to trace."""
    per_reason = [(str(r), int(n)) for r, n in counters.get("graph_break_counts") or [] if isinstance(r, str)]
    if not per_reason:  # a probe that counts only the total
        reasons = [r for r in counters.get("graph_break_reasons") or [] if isinstance(r, str)]
        return int(counters.get("graph_breaks") or 0), reasons, 0
    asked = [any(re.search(p, reason) for p in deliberate) for reason, _ in per_reason]
    kept = [(reason, n) for (reason, n), is_asked in zip(per_reason, asked) if not is_asked]
    return sum(n for _, n in kept), [r for r, _ in kept], sum(n for (_, n), a in zip(per_reason, asked) if a)


JUDGES = {"compare": _accuracy, "timing": _performance, "recompiles": _recompilation, "graph_breaks": _graph_breaks}


# --- why a repro did not reproduce ---------------------------------------------------------------

@dataclass(frozen=True)
class Reason:
    code: str  # needs_package | needs_data | incomplete_snippet | needs_gpu | notebook_only | fixed_since | ran_clean | ...
    sentence: str
    next_step: str = ""


def reason_from_exception(exception: Mapping | None, rules: Mapping) -> Reason | None:
    """A reason read from the exception a run ended with (rules/reproduction.yaml `not_reproduced`;
    `blocks` rules only through `blocking_reason`, which checks their name against the script)."""
    return next((reason for rule, match, reason in _matching(exception, rules) if not rule.get("blocks")), None)


def blocking_reason(exception: Mapping | None, script: str, rules: Mapping) -> Reason | None:
    """The reason a failed run never reached the reported bug (a `blocks: true` rule whose captured
    `name` the script itself uses: an option or function of another torch version), else None."""
    return next((reason for rule, match, reason in _matching(exception, rules)
                 if rule.get("blocks") and re.search(rf"\b{re.escape(match.group('name'))}\b", script)), None)


def _matching(exception: Mapping | None, rules: Mapping) -> Iterator[tuple[Mapping, re.Match, Reason]]:
    if not exception:
        return
    kind = str(exception.get("type") or "").rsplit(".", 1)[-1]
    message = str(exception.get("message") or "")
    for rule in rules["not_reproduced"]:
        match = re.search(rule["message"], message) if kind in rule["exception"] else None
        if match:
            found = match.group(1) if match.groups() else ""
            values = {"match": quoted(found, 120)[1:-1], "message": quoted(message, 200)}  # the sentence's spans
            yield rule, match, Reason(rule["reason"], rule["sentence"].format(**values),
                                      rule.get("next_step", "").format(**values))


def missing_name(exception: Mapping | None) -> str | None:
    """The name of a NameError ("name 'nn' is not defined")."""
    if not exception or not str(exception.get("type", "")).endswith("NameError"):
        return None
    match = re.search(r"name '(\w+)' is not defined", str(exception.get("message", "")))
    return match.group(1) if match else None


def with_obvious_import(script: str, name: str, rules: Mapping) -> str | None:
    """The script with the obvious import of `name` added at the top (after a docstring and
    `__future__` imports), or None when `name` is not one of the obvious ones."""
    statement = rules["obvious_imports"].get(name)
    if statement is None or re.search(rf"^\s*{re.escape(statement)}\s*$", script, re.M):
        return None
    lines = script.split("\n")
    insert_at = 0
    for index, line in enumerate(lines):
        if line.startswith("from __future__ import"):
            insert_at = index + 1
    return "\n".join(lines[:insert_at] + [statement] + lines[insert_at:])


NOTEBOOK_RE = re.compile(r"^\s*(?:%|!)\w|get_ipython\(\)|display\(", re.M)
NOTEBOOK_LINK_RE = re.compile(r"\.ipynb\b|colab\.research\.google\.com|kaggle\.com/code", re.I)


def notebook_only(issue_text: str, script: str | None) -> bool:
    """The repro lives in a notebook the issue links to (or uses IPython magics), not in the text."""
    if script is not None:
        return bool(NOTEBOOK_RE.search(script))
    return bool(NOTEBOOK_LINK_RE.search(issue_text))


def version_tuple(version: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


GUARD_STEP = ("Check the fix on the reporter's side; `@pt2-triage draft-pr` offers the generated test as a guard "
              "against a regression.")


def fixed_since(reporter_torch: str | None, runner_torch: str | None) -> Reason | None:
    """The reporter used an older torch than the runner (or did not say which): the bug may have
    been fixed in between. None when the report used this torch or a newer one."""
    reported, here = version_tuple(reporter_torch), version_tuple(runner_torch)
    if here and not reported:
        return Reason("fixed_since", f"it ran without failing on torch {runner_torch}; the report does not say which torch "
                                     "it used, so this may be fixed since", GUARD_STEP)
    if not reported or not here or reported >= here:
        return None
    return Reason("fixed_since", f"it did not reproduce on torch {runner_torch}; the report used {reporter_torch}, "
                                 "so this may be fixed", GUARD_STEP)


COMPILED_ONLY_RULE = "compiled_only"  # the deciding rule of a failure outside the compiler that only compiled runs show


def compiled_only_category(text_category: str | None, table: Mapping, entry: str | None = None) -> str:
    """The category of a compiled-only failure (compiled_only): reproduction.yaml's `compiled_only`
    one, or the text's where it is one of those the table allows (the reporter called it a mismatch),
    or, where only torch.export / AOTInductor were turned off (`entry`), theirs."""
    if entry:
        return table["entry_categories"][entry]
    return text_category if text_category in table["text_categories"] else table["category"]


def compiled_only(run: Classification, category: str) -> Classification:
    """A run's failure with an error outside the compiler, in a script that runs clean with the
    compiler off, as the compiler's failure of `category`: the error is the script's own
    (fresh_issues_11's `.view()` on a compiled output whose strides differ from eager's), the cause
    is the compiler's. The signature keeps the failure itself, so "the same failure" still compares it."""
    failure = run.signature.split("|", 1)[1] if "|" in run.signature else run.signature
    return replace(run, category=category, signature=f"{category}|{failure}", is_pt2=True, rule=COMPILED_ONLY_RULE,
                   decided_by="rule", unsure=False, alternatives=())


def outside_pt2_reason(exception: str | None, status: str) -> Reason:
    """Why a run that failed did not reproduce a PT2 failure: what failed was not the compiler."""
    what = (exception or status).split("\n", 1)[0][:200]
    return Reason("fails_outside_pt2", f"it fails, but with an error outside the compiler ({what})",
                  "Fix the error in the code first; the ablation ladder below shows whether it fails without the compiler too.")


def eager_shares_reason(exception: str | None, status: str, reporter_torch: str | None, runner_torch: str | None,
                        eager_exception: str | None = None) -> Reason:
    """Why a run that failed is no PT2 reproduction: the compiler-off rung fails the same way (with
    `eager_exception`, named too when it is worded otherwise). When the report used an older torch,
    the compiler's part of it may be fixed since."""
    what = (exception or status).split("\n", 1)[0][:200]
    eager = (eager_exception or "").split("\n", 1)[0][:200]
    if eager and eager != what:
        what = f"eager: {eager}; compiled: {what}"
    sentence = f"it fails, but the same way with the compiler off ({what}), so what fails here is the code or eager PyTorch"
    older = fixed_since(reporter_torch, runner_torch)
    if older and version_tuple(reporter_torch):
        sentence += f"; the report used torch {reporter_torch}, so the compiler's part of it may be fixed since"
    return Reason("fails_without_compiler", sentence,
                  "Check that the script shows the reported behaviour without failing on its own (an assert that "
                  "eager trips too shows nothing about the compiler).")


def reported_error_absent(shown_type: str | None, text_category: str, exception: str | None, run_category: str | None,
                          reporter_torch: str | None, runner_torch: str | None) -> Reason | None:
    """The report shows its failure's final exception (whole, not cut off) and the run failed with an
    exception of another type and another category: what failed here is not what was reported
    (on a newer torch the reported bug is often fixed and the script trips over something else, e.g.
    Dynamo now refusing under fullgraph=True the op that AOTAutograd used to crash on). None when
    they agree or the text shows no complete exception."""
    if not shown_type or shown_type == CUT_OFF_TYPE or not exception or run_category == text_category:
        return None
    if short_type(exception.partition(":")[0].strip()) == short_type(shown_type):
        return None
    what = exception.split("\n", 1)[0][:200]
    sentence = (f"it fails here, but not the way the report shows: the report's {short_type(shown_type)} ({text_category}) "
                f"did not occur; the run raised {what} ({run_category})")
    if fixed_since(reporter_torch, runner_torch) and version_tuple(reporter_torch):
        sentence += f"; the report used torch {reporter_torch}, so the reported failure may be fixed since and this is another one"
    return Reason("fails_differently", sentence,
                  "Check whether the new error is the reported bug surfacing elsewhere; if it is a bug of its own, "
                  "file it separately (`@pt2-triage run` on the new issue).")


def clean_run_reason(reporter_torch: str | None, runner_torch: str | None, reporter_gpu: bool, ran_on: str) -> Reason:
    """Why a script that ran clean did not reproduce, when its output named no cause: the reporter's
    GPU, then the torch versions, else the machine."""
    if reporter_gpu and ran_on == "cpu":
        return Reason("needs_gpu", "it ran without failing on the CPU; the report used a GPU, where it may fail",
                      "A GPU runner reproduces it: `@pt2-triage run gpu`.")
    return fixed_since(reporter_torch, runner_torch) or Reason(
        "ran_clean", f"it ran without failing on torch {runner_torch}, the version the report used or a newer one; "
                     "the failure may depend on the reporter's machine (OS, compiler, CPU features) or inputs",
        "Post the exact environment (`python -m torch.utils.collect_env`) and the inputs that fail.")


def where(device: str, torch_version: str | None) -> str:
    """Where a run ran, for the summary: "on cuda with torch 2.13.0"."""
    return f"on {device}" + (f" with torch {torch_version}" if torch_version else "")


def summary_sentence(status: str, category: str | None, hits: int, total: int, device: str, torch_version: str | None,
                     reason_text: str | None = None, silent: str | None = None) -> str:
    """The reproduction's one-line summary, for every status."""
    place = where(device, torch_version)
    if silent:
        return f"Reproduced {place}: {category}, {silent}."
    return {
        "reproduced": f"Reproduced {place}: {category} ({hits}/{total} runs).",
        "flaky": f"Flaky {place}: {category} in {hits} of {total} runs.",
        "timeout": f"Did not finish {place}: every run hit the time limit.",
        "limit": f"Did not reproduce {place}: a resource limit stopped the run.",
        "crashed": f"Crashed {place} without PT2 evidence (killed by a signal).",
        "not_reproduced": f"Not reproduced here ({place}): {reason_text or 'the script ran without failing'}.",
    }[status]
