"""Scale out on Dask: data-parallel boosting and distributed forests.

Needs ``dask[distributed]`` (``pip install gputrees[dask]``). The estimators
train on dask arrays or dask dataframes (NumPy or CuPy chunks) with Dask's own
scheduler and communication: each worker keeps the rows it holds in a
long-lived actor (:class:`~gputrees.dask._shard.Shard`). Over TCP, boosting
rounds are grown on the workers, which exchange only the levels' histograms and
node sums with each other (the client sends one request a round); elsewhere,
and for forests and the losses whose leaves are distributed quantiles, these
travel per tree level to the client, which finds the splits and sends them back. The fitted models are plain gputrees models (``to_local()``,
``save_model``), and ``predict`` on dask input runs partition by partition on
the workers.

* :class:`DaskGradientBoostingClassifier`, :class:`DaskGradientBoostingRegressor`
* :class:`DaskRandomForestClassifier`, :class:`DaskRandomForestRegressor`
  (``distribution="data_parallel"``: the single-machine forest;
  ``"local"``: each worker grows its share of the trees on its own rows)
* :class:`WorkerLostError`: a worker holding rows died during a fit.
"""

from ._boosting import DaskGradientBoostingClassifier, DaskGradientBoostingRegressor
from ._cluster import Exchange, WorkerLostError
from ._forest import DaskRandomForestClassifier, DaskRandomForestRegressor

__all__ = [
    "DaskGradientBoostingClassifier",
    "DaskGradientBoostingRegressor",
    "DaskRandomForestClassifier",
    "DaskRandomForestRegressor",
    "Exchange",
    "WorkerLostError",
]
