"""Knowledge updates: does memory answer with a fact's current value, keep its old
values out of the context, answer as of a past date, and tell a fact's history?

    dataset = generate(seed=0, subjects=120)
    reports = [await run(dataset, budget=b) for b in (256, 64)]
    print(table(reports))

The same from a shell: ``contextforge eval-updates`` or
``python benchmarks/knowledge_update.py``; the method is in ``docs/knowledge-update.md``.

:func:`generate` writes, from a seed and fixed word lists, the memory of several
users (one scope each). Each user's memory mentions a dozen subjects (people,
projects, services); each subject has two or three slots (a person's city, a
project's deadline, a service's owner...), and each slot is stated once, then
changed 1 to 6 times over 18 simulated months, with chit-chat about the same
subjects in between. Every slot (a *fact*) gets three questions: its current
value, its value on a date between two changes, and its history.

:func:`run` answers them with one system at a time:

- ``keys``: contextforge, each version saved with ``key="<subject>.<slot>"`` (so a
  change supersedes the previous version); current questions ``query(..., now=end)``,
  as-of questions ``query(..., as_of=T, now=end)``, history ``history(key, scope)``;
- ``no-keys``: contextforge, the same entries without keys (recency ranking only);
  as-of questions ``query(..., until=T, now=T)``;
- ``bm25``: plain BM25 (bm25s, Lucene variant, the English stemmer of
  ``benchmarks/eval_locomo.py``) per scope, packed greedily into the same budget by
  the store's own token counts; as-of questions search the entries before T.

The metrics (:func:`score`; each a mean over questions):

- ``current@1``: the current version is the top hit;
- ``current in budget``: the current version is among the packed hits;
- ``stale leak``: an older version of the slot is among the packed hits;
- ``as-of@1``: the version true at T is the top hit;
- ``history``: for ``keys``, the share of the versions that ``history()`` returns
  in order (longest common subsequence / versions); for the others, which have no
  history call, the share of the versions among the hits packed for the history
  question, in any order.
"""

from __future__ import annotations

from .data import DEFAULT_SUBJECTS, Dataset, Fact, Item, Question, generate
from .metrics import METRICS, MISSES, Answer, misses, ordered_fraction, present_fraction, score
from .report import Report, SystemResult, table
from .systems import DEFAULT_BUDGETS, SYSTEMS, run

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_SUBJECTS",
    "METRICS",
    "MISSES",
    "SYSTEMS",
    "Answer",
    "Dataset",
    "Fact",
    "Item",
    "Question",
    "Report",
    "SystemResult",
    "generate",
    "misses",
    "ordered_fraction",
    "present_fraction",
    "run",
    "score",
    "table",
]
