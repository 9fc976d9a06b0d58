"""Power-model refit speed: loading and validating the measured-power corpus, computing each point's
time shares, one fit, and the leave-one-group-out holdout that `ecobench validate --mode holdout`
runs (each repeated; medians).

Usage: python benchmarks/bench_power_fit.py
"""

from __future__ import annotations

import argparse
import statistics
import time

from ecobench.power import corpus as corpus_mod
from ecobench.power import fit as fit_mod

REPEATS = 5


def _time(fn) -> float:  # noqa: ANN001
    times = []
    for _ in range(REPEATS):
        corpus_mod.load_corpus.cache_clear()
        fit_mod.corpus_features.cache_clear()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    load = _time(corpus_mod.load_corpus)
    feats = _time(fit_mod.corpus_features)
    fs = fit_mod.corpus_features()
    one = _time(lambda: fit_mod.fit(list(fs)))
    held = _time(lambda: fit_mod.holdout(fs))
    c = corpus_mod.load_corpus()
    print(f"corpus: {len(c.points)} points, {len(c.sources)} sources; fitted: {len(fs)} points")
    print(f"load and validate the corpus      {load * 1000:8.1f} ms")
    print(f"load + time shares of every point {feats * 1000:8.1f} ms")
    print(f"one fit                           {one * 1000:8.1f} ms")
    print(f"leave-one-group-out holdout       {held * 1000:8.1f} ms (on the computed shares)")


if __name__ == "__main__":
    # no options: an unknown argument is refused (exit 2, with the usage) rather than ignored
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
