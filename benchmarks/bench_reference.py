"""Reference-backend measurement quality on this host (issue figures, not timed tests).

1. Two back-to-back runs of the same reference configuration: throughput agreement.
2. Energy-tracker overhead: throughput with codecarbon tracking against without.
3. Model FLOP utilisation of the encoder against the host's measured GEMM peak.

Usage: python benchmarks/bench_reference.py   (about 3 minutes on a 2-core machine)
"""

from __future__ import annotations

import argparse

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

MEASURE = {"warmup_s": 2, "min_window_s": 2, "repetitions": 10, "gemm_s": 2}


def run(track: bool) -> dict:
    s = scenario_from_dict({
        "schema_version": 1, "name": "bench", "baseline": "host",
        "workload": {"model": "bert-base", "inference": {"rate_per_h": 1e5, "seq_len": 128,
                                                          "batch_size": 4}},
        "configs": [{"id": "host", "instance_type": "local", "backend": "reference",
                     "device": "cpu", "layers": 2}],
        "measurement": MEASURE | {"track_energy": track}})
    return evaluate(s).iloc[0].to_dict()


def main() -> None:
    a, b = run(True), run(True)
    plain = run(False)
    ta, tb, tp = (r["throughput_per_instance_per_s"] for r in (a, b, plain))
    print(f"back-to-back: {ta:.3f} vs {tb:.3f} samples/s, difference {abs(ta - tb) / tb * 100:.1f}% "
          "(target < 10%)")
    overhead = (tp - (ta + tb) / 2) / tp * 100
    print(f"tracker overhead: {tp:.3f} untracked vs {(ta + tb) / 2:.3f} tracked samples/s, "
          f"{overhead:+.1f}% (target < 3%)")
    print(f"encoder MFU vs host GEMM peak ({a['host_gemm_tflops']:.3f} TFLOP/s): {a['mfu'] * 100:.0f}% "
          "(target >= 50%)")
    print(f"energy method: {a['measurement_method']}")


if __name__ == "__main__":
    # no options: an unknown argument is refused (exit 2, with the usage) rather than ignored
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
