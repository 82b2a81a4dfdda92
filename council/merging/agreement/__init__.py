"""Agreement across reviewers: which findings of different reviewers describe one problem.

* :mod:`~council.merging.agreement.words`: a finding's telling read into terms, its prose
  and the words it has only in code;
* :mod:`~council.merging.agreement.quoting`: what a line finding quotes of the change;
* :mod:`~council.merging.agreement.relation`: :func:`score` and :func:`agrees_with`
  (words weighed by IDF over the consolidation, lowered where the prose agrees less,
  times the place; an analyzer's telling only on its own lines and rule);
* :mod:`~council.merging.agreement.pairs`: which pairs are scored: linear, never all pairs;
* :mod:`~council.merging.agreement.clusters`: :func:`cluster`, average-linkage groups;
* :mod:`council.merging.recognition`: :func:`recognize`, a remembered finding, one to one.

Pure. Source: docs/harvest.md §8; bench/agreement.py measures precision, recall and
speed against the ``says_the_same`` baseline.
"""

from council.merging.agreement.clusters import cluster
from council.merging.agreement.relation import THRESHOLD, agrees_with, best_agreeing, score
from council.merging.recognition import Recognition, recognize

__all__ = [
    "THRESHOLD",
    "Recognition",
    "agrees_with",
    "best_agreeing",
    "cluster",
    "recognize",
    "score",
]
