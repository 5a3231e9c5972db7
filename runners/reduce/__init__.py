"""A test-case reducer for Python source: smallest program for which a predicate still holds.

Generic mechanism: it knows Python syntax, nothing about PT2. The caller supplies
`is_interesting(source) -> bool` (for us: "runs in the sandbox and fails with the same
signature"). Every candidate is produced by editing the syntax tree and unparsing it, so every
candidate parses. Passes run coarse to fine and repeat until none makes progress:

  dead         delete what nothing reads (unread imports, definitions, fields, `self.` attributes) in
               one candidate, then two narrower ones
  statements   delete runs of statements in every block (hierarchical delta debugging)
  unwrap       replace if/for/while/with/try by their bodies
  instances    instantiate another class of the module, or a layer the class builds in __init__,
               instead (drops wrapper layers; the class goes when nothing else uses it)
  parameters   drop a function's (or class __init__'s) parameter together with its call-site arguments
  classes      a plain class made for one object (a `Predictor`, a `Trainer`) dissolved into module-level
               functions and names, its `__init__` run where the object was made
  inline       inline a variable that is assigned once and read once, and a function called once
  arguments    drop call arguments, keyword arguments, list/tuple elements, def parameters
  expressions  replace an expression by one of its subexpressions, or a call by one of the
               caller's `replacements` (simple expressions from the caller's domain)
  constants    shrink numbers (sizes, shapes, ranges, loop counts) toward 1 and 0

A candidate that reads a name nothing binds in its scope (a sure NameError, e.g. a deleted
definition still called), a `self` attribute its class never sets (AttributeError) or calls one
of the module's functions with arguments it cannot take (TypeError) is never run, unless the
original already did so. After an accepted edit a pass goes on where it was; the next round
starts it from the beginning again. An edit that failed is not run again while it would rewrite the
same top-level statement the same way, until a round makes no progress: then one round retries
everything, so the result is a fixpoint of every edit.

A pass that made progress is followed at once by the dead-code pass, so code it left unread goes
before a finer pass spends runs on it.

Candidates are cached by their text; a batch of candidates is tested in parallel threads when
`parallelism > 1` (the predicate should then be thread-safe, e.g. one subprocess per call).

The package, by concern: `base` (types, statistics, the size measure), `checks` (candidates that fail
for sure), `paths` (addressing nodes), `dead`, `structural`, `rewrites`, `classes` and the rest (the passes), `driver` (the search).
"""
from __future__ import annotations

from runners.reduce.base import (Edit, NodePath, PathStep, Predicate, ReduceResult, ReduceStats, Reserve, count_tokens,
                                 size_key)
from runners.reduce.checks import bad_calls, dangling_attributes, sure_errors, unbound_names
from runners.reduce.driver import PASSES, Reducer, reduce_source

__all__ = ["Edit", "NodePath", "PathStep", "Predicate", "ReduceResult", "ReduceStats", "Reserve", "count_tokens", "size_key",
           "bad_calls", "dangling_attributes", "sure_errors", "unbound_names", "PASSES", "Reducer", "reduce_source"]
