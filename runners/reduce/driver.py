"""The driver: runs the passes coarse to fine, tests candidates (cached by text, in parallel batches), keeps the
smallest that is still interesting, and stops at the budget.

Rounds repeat the passes until none makes progress, and most of a later round's runs retry edits
that failed in an earlier one on code that has not changed since (the 93-line graph-break report of
benchmarks/realistic_issues: rounds 2-6 spent 243 runs on argument, expression and constant edits
and accepted 11). So an edit that failed is remembered by what it changes: the one top-level
statement it rewrites, before and after. While it would rewrite the same text the same way, it is
not run again. Elsewhere the program may have changed in a way that now lets it succeed, so a round
that makes no progress is followed by one that remembers nothing: the result is a fixpoint of every
edit, as without the memory.

A pass that made progress is followed at once by the dead-code pass (at most four candidates, none
when nothing is unread): a dropped argument or parameter often leaves a helper, a layer or a
config entry unread, and without it the finer passes would spend their runs shrinking code the
next round deletes in one run (`dynamic_batch_specialized`: 151 expression runs in round one, then
75 tokens dead at the start of round two)."""
from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, NamedTuple, Sequence

from runners.reduce.base import (Edit, Predicate, ReduceResult, ReduceStats, Reserve, count_tokens, format_source,
                                 size_key)
from runners.reduce.checks import sure_errors
from runners.reduce.shape import Shape, joined, shape_of
from runners.reduce.structural import argument_edits, constant_edits, expression_edits, statement_edits, unwrap_edits
from runners.reduce.rewrites import inline_edits, instance_edits, parameter_edits
from runners.reduce.classes import class_edits
from runners.reduce.dead import dead_code_edits
from runners.reduce.folds import fold_edits
from runners.reduce.literals import literal_edits
from runners.reduce.modules import attribute_edits, default_edits, function_edits, layer_edits
from runners.reduce.records import field_edits


PASSES: tuple[Callable[..., Iterator[tuple[str, Edit]]], ...] = (
    dead_code_edits, statement_edits, unwrap_edits, instance_edits, layer_edits, attribute_edits, default_edits, field_edits,
    parameter_edits, function_edits, class_edits, fold_edits, inline_edits, literal_edits, argument_edits, expression_edits, constant_edits)


class Reducer:
    def __init__(self, is_interesting: Predicate, *, budget_s: float = 300, max_runs: int = 10_000,
                 parallelism: int = 1, batch: int | None = None, replacements: Sequence[str] = (),
                 keep_shape: bool = True, reserve: Reserve = Reserve(), stop: Callable[[], bool] = lambda: False,
                 keep_branch: bool = True):
        self.is_interesting = is_interesting
        self.stop = stop  # the caller's word that the search is no longer wanted: it ends as at its budget's end
        # The search stops this long before the budget's end (Reserve): a candidate's run is as long
        # as the re-checks after the search will be, and candidates get faster as the program shrinks
        # and the caches fill, so the estimate follows them instead of the original's cold run.
        self.reserve = reserve
        self.recent_interesting_s: deque[float] = deque(maxlen=3)  # the latest interesting calls' seconds
        self.replacements = [ast.parse(text, mode="eval").body for text in replacements]
        self.budget_s = budget_s
        self.max_runs = max_runs
        self.parallelism = max(1, parallelism)
        self.batch = batch or self.parallelism
        self.cache: dict[str, bool] = {}
        self.allowed_errors: frozenset[str] | None = None  # the original's own sure errors (see sure_errors)
        self.keep_shape = keep_shape
        self.keep_branch = keep_branch  # False: the failure is not a branch's, so no branch need stay (shape.py)
        self.shape: Shape | None = None  # what the original is about (see shape.py), kept by every candidate
        self.stats = ReduceStats()
        self.deadline = self.started = 0.0
        self.history: list[str] = []  # accepted candidates, oldest first
        self.failed_edits: set[tuple[str, str]] = set()  # (top-level statement before, after) of edits that failed
        self.recall_failures = True  # off for the round that confirms a fixpoint
        # True while the result is re-checked: a caller's clock must let those runs finish, since a
        # re-check cut short by the budget would read as a flaky predicate and lose the result
        self.confirming = False

    def reduce(self, source: str, leaps: Sequence[str] = (), known_interesting: bool = False) -> ReduceResult:
        """The smallest interesting program the passes reach from `source`. `leaps` are whole
        programs a caller proposes as a shortcut (hoist.py: the failing module compiled alone); the
        first of them that is smaller, keeps the shape and is interesting is where round one starts.
        `known_interesting`: the caller's own runs already showed `source` interesting, so it is not
        run again (for an AOTInductor package that run is a whole C++ build, 10-25 s of a 120 s budget)."""
        started = self.started = time.monotonic()
        self.deadline = started + self.budget_s
        self.stats = ReduceStats(lines_before=len(source.splitlines()), tokens_before=count_tokens(source))
        self.history, self.failed_edits, self.recall_failures = [], set(), True
        self.recent_interesting_s.clear()
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            return self._finish(source, started, f"the input does not parse: {exc.msg} (line {exc.lineno})")
        if self._out_of_budget():
            return self._finish(source, started, "budget: none left to test the original (the runs before the search used it)")
        if known_interesting:
            self.cache[hashlib.sha1(source.encode()).hexdigest()] = True
        elif not self._test(source):
            return self._finish(source, started, "the original is not interesting: nothing to preserve")
        self.allowed_errors = sure_errors(tree)
        self.shape = self._kept(shape_of(tree)) if self.keep_shape else None
        best = source
        with ThreadPoolExecutor(self.parallelism) if self.parallelism > 1 else _Inline() as pool:
            self.pool = pool
            tree, best = self._timed_leap(leaps, tree, best)
            reason = "fixpoint: no pass makes progress"
            while True:
                self.stats.rounds += 1
                progressed, recalled = False, self.stats.failures_recalled
                for make_edits in PASSES:
                    tree, best, changed = self._timed_pass(make_edits, tree, best)
                    progressed |= changed
                    if changed and make_edits is not dead_code_edits and not self._out_of_budget():
                        tree, best, _ = self._timed_pass(dead_code_edits, tree, best)
                    if self._out_of_budget():
                        break
                if self._out_of_budget():
                    reason = self._budget_reason()
                    break
                if not progressed and self.stats.failures_recalled == recalled:
                    break
                self.recall_failures = progressed  # no progress with edits skipped: retry them all once
        if self.stop():  # the caller no longer wants a result: none is confirmed
            return self._finish(best, started, reason)
        self.confirming = True
        try:
            confirmed = self._confirm(best, source)
        finally:
            self.confirming = False
        return self._finish(confirmed, started, reason)

    def _timed_leap(self, leaps: Sequence[str], tree: ast.AST, best: str) -> tuple[ast.AST, str]:
        """Test the leaps (in parallel batches, in the caller's order) that a pass would also let
        through; accept the first interesting one. Counted under the pass name "hoist"."""
        runs, started = self.stats.runs, time.monotonic()
        pending = []
        for position, source in enumerate(leaps):
            try:
                candidate_tree = ast.parse(source)
            except (SyntaxError, ValueError):
                continue
            if self._admissible(source, candidate_tree, best, leap=True):
                self.stats.candidates += 1
                pending.append(Candidate("hoist", source, candidate_tree, position, None))
        winner = None
        for start in range(0, len(pending), self.batch):
            if self._out_of_budget() or (winner := self._first_interesting(pending[start:start + self.batch])):
                break
        if pending:
            self._count_pass("hoist", runs, started)
        if not winner:
            return tree, best
        if self.shape is not None:
            self.shape = self._kept(joined(self.shape, shape_of(winner.tree)))
        return self._accept(winner)

    def _timed_pass(self, make_edits, tree: ast.AST, best: str) -> tuple[ast.AST, str, bool]:
        """_run_pass, with its runs and wall time added to the statistics under the pass's name."""
        runs, started = self.stats.runs, time.monotonic()
        result = self._run_pass(make_edits, tree, best)
        self._count_pass(make_edits.__name__.removesuffix("_edits"), runs, started)
        return result

    def _count_pass(self, name: str, runs_before: int, started: float) -> None:
        self.stats.pass_runs[name] = self.stats.pass_runs.get(name, 0) + self.stats.runs - runs_before
        self.stats.pass_seconds[name] = round(self.stats.pass_seconds.get(name, 0.0) + time.monotonic() - started, 2)

    def _admissible(self, candidate: str, candidate_tree: ast.AST, best: str, leap: bool = False) -> bool:
        """Whether a candidate is worth a run: smaller than the best, not a sure NameError /
        AttributeError / TypeError, and the same kind of repro (shape.py). Skips are counted. A
        leap's sizes are the original's own (recorded from its run), so a 0 or 1 in a dynamic
        dimension there is no change of shape (see shape.joined)."""
        if size_key(candidate) >= size_key(best):
            return False
        if self._sure_to_fail(candidate_tree):
            self.stats.sure_failures_skipped += 1
            return False
        shape = shape_of(candidate_tree)
        if leap and self.shape is not None:
            shape = dataclasses.replace(shape, zero_one_dynamic=self.shape.zero_one_dynamic)
        if self.shape is not None and not self.shape.kept_by(shape):
            self.stats.shape_changes_skipped += 1
            return False
        return True

    def _run_pass(self, make_edits, tree: ast.AST, best: str) -> tuple[ast.AST, str, bool]:
        """Apply edits of one pass greedily. After an accepted edit the edits are regenerated from
        the new tree and the pass goes on from the same position rather than from the start: the
        edits before it failed a moment ago and mostly still would, and re-running them after
        every success costs quadratic runs. The caller's next round retries them all (fixpoint)."""
        changed, restart, resume_at = False, True, 0
        while restart and not self._out_of_budget():
            restart = False
            pending: list[Candidate] = []
            statements = top_level_texts(tree)
            edits = make_edits(tree, self.replacements) if make_edits is expression_edits else make_edits(tree)
            for position, (pass_name, edit) in enumerate(edits):
                if position < resume_at:
                    continue
                candidate_tree = copy.deepcopy(tree)
                try:
                    if not edit(candidate_tree):
                        continue
                    candidate = format_source(candidate_tree)
                except (IndexError, AttributeError, TypeError, ValueError, RecursionError):
                    continue
                if not self._admissible(candidate, candidate_tree, best):
                    continue
                change = rewritten_statement(statements, candidate_tree)
                if change is not None and self.recall_failures and change in self.failed_edits:
                    self.stats.failures_recalled += 1
                    continue
                self.stats.candidates += 1
                pending.append(Candidate(pass_name, candidate, candidate_tree, position, change))
                if len(pending) >= self.batch:
                    winner = self._first_interesting(pending)
                    pending = []
                    if winner:
                        tree, best, resume_at = *self._accept(winner), winner.position
                        changed = restart = True
                        break
                if self._out_of_budget():
                    break
            if not restart and pending and not self._out_of_budget():
                winner = self._first_interesting(pending)
                if winner:
                    tree, best, resume_at = *self._accept(winner), winner.position
                    changed = restart = True
        return tree, best, changed

    def _kept(self, shape: Shape) -> Shape:
        return shape if self.keep_branch else shape.without_branch()

    def keeps_shape(self, source: str) -> bool:
        """Whether `source` keeps what the last search kept (shape.py): a caller's own edits of the
        result (tidying it) must not drop what no candidate was allowed to drop."""
        if self.shape is None:
            return True
        try:
            return self.shape.kept_by(shape_of(ast.parse(source)))
        except SyntaxError:
            return False

    def _sure_to_fail(self, tree: ast.AST) -> bool:
        """A candidate that reads a name or `self` attribute nothing sets, or calls one of the
        module's functions with arguments it cannot take, where the original did not: a sure
        NameError, AttributeError or TypeError, not worth a run."""
        if self.allowed_errors is None:
            return False
        errors = sure_errors(tree)
        return errors is not None and not errors <= self.allowed_errors

    def _accept(self, winner: "Candidate") -> tuple[ast.AST, str]:
        self.stats.accepted += 1
        self.stats.passes[winner.pass_name] = self.stats.passes.get(winner.pass_name, 0) + 1
        self.history.append(winner.source)
        self.stats.progress.append((round(time.monotonic() - self.started, 1), self.stats.runs, count_tokens(winner.source),
                                    winner.pass_name))
        return ast.parse(winner.source), winner.source

    def _first_interesting(self, pending: Sequence["Candidate"]) -> "Candidate | None":
        """Test a batch (in parallel when allowed); the earliest interesting one wins (deterministic).
        The rewrites that failed are remembered (see the module docstring)."""
        results = list(self.pool.map(lambda item: self._test(item.source), pending))
        if not self._out_of_budget():  # a candidate the deadline stopped says nothing
            self.failed_edits.update(item.change for item, ok in zip(pending, results) if not ok and item.change is not None)
        return next((item for item, ok in zip(pending, results) if ok), None)

    def _test(self, candidate: str, use_cache: bool = True) -> bool:
        key = hashlib.sha1(candidate.encode()).hexdigest()
        if use_cache and key in self.cache:
            self.stats.cache_hits += 1
            return self.cache[key]
        if self._out_of_budget():
            return False
        self.stats.runs += 1
        started = time.monotonic()
        try:
            verdict = bool(self.is_interesting(candidate))
        except Exception:  # a predicate that crashes says "not interesting", never aborts the search
            verdict = False
        if verdict:
            self.recent_interesting_s.append(time.monotonic() - started)
        self.cache[key] = verdict
        return verdict

    def _confirm(self, best: str, original: str) -> str:
        """Re-test the result uncached, to catch a flaky predicate; on failure walk back through
        up to three earlier accepted steps, and finally to the original (known interesting)."""
        for candidate in [best] + self.history[-2:-5:-1]:
            if candidate == original:
                break
            self.stats.runs += 1
            try:
                if self.is_interesting(candidate):
                    if candidate != best:
                        self.stats.stop_reason = "flaky: the smallest result did not hold on a re-check; returned an earlier step"
                    return candidate
            except Exception:
                pass
        if best != original:
            self.stats.stop_reason = "flaky: no reduced result held on a re-check; returned the original"
        return original

    def _out_of_budget(self) -> bool:
        search_end = self.deadline - self.reserve.seconds(tuple(self.recent_interesting_s))
        return time.monotonic() > search_end or self.stats.runs >= self.max_runs or self.stop()

    def _budget_reason(self) -> str:
        if self.stop():
            return "stopped: the caller no longer wanted the search"
        return "budget: max runs reached" if self.stats.runs >= self.max_runs else "budget: time ran out"

    def _finish(self, source: str, started: float, reason: str) -> ReduceResult:
        self.stats.lines_after = len(source.splitlines())
        self.stats.tokens_after = count_tokens(source)
        self.stats.wall_s = round(time.monotonic() - started, 3)
        if not self.stats.stop_reason.startswith("flaky"):
            self.stats.stop_reason = reason
        return ReduceResult(source, self.stats)


class Candidate(NamedTuple):
    pass_name: str
    source: str
    tree: ast.AST
    position: int  # of its edit in the pass: after it is accepted the pass goes on from there
    change: tuple[str, str] | None  # rewritten_statement(): what a failure is remembered by


def top_level_texts(tree: ast.AST) -> list[str]:
    return [ast.unparse(node) for node in getattr(tree, "body", [])]


def rewritten_statement(before: list[str], candidate_tree: ast.AST) -> tuple[str, str] | None:
    """(before, after) of the one top-level statement a candidate rewrites; None when it deletes,
    adds or rewrites more than one (such a candidate is judged by its whole text only)."""
    after = getattr(candidate_tree, "body", [])
    if len(after) != len(before):
        return None
    changed = None
    for index, node in enumerate(after):
        text = ast.unparse(node)
        if text != before[index]:
            if changed is not None:
                return None
            changed = (before[index], text)
    return changed


class _Inline:
    """A pool stand-in that maps in the calling thread, stopping at the first True."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        for item in items:
            result = fn(item)
            yield result
            if result:
                return


def reduce_source(source: str, is_interesting: Predicate, leaps: Sequence[str] = (), **options) -> ReduceResult:
    return Reducer(is_interesting, **options).reduce(source, leaps=leaps)
