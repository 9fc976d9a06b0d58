"""The backend-disagreement check: only differences beyond the two backends' validated error."""

from dataclasses import replace

import pytest

from ecobench.hardware.backends import BACKENDS, Job
from ecobench.hardware.backends.disagreement import backend_disagreement, combined_error
from ecobench.hardware.catalog import load_catalog
from ecobench.parallel.layout import Layout
from ecobench.workloads import preset

CAT = load_catalog()
EMU = BACKENDS["emulated"]


def test_disagreement_flags_only_differences_beyond_the_validated_error():
    a, inst = preset("llama2-7b"), CAT.instance("trn1.32xlarge")
    job = Job(
        arch=a,
        mode="training",
        seq_len=4096,
        batch_size=1,
        dtype="bf16",
        instances=4,
        global_batch_size=1024,
        layout=Layout(8, 1, 16, 1, "selective", 1),
    )
    perf = EMU.evaluate(job, inst, CAT)
    assert backend_disagreement([job], [perf], inst, CAT) is None  # within the validated error
    doubled = replace(perf, throughput_per_instance_per_s=2 * perf.throughput_per_instance_per_s)
    msg = backend_disagreement([job], [doubled], inst, CAT)
    assert msg is not None and "validated to" in msg
    analytic = BACKENDS["analytic"].evaluate(job, inst, CAT)
    assert backend_disagreement([job], [analytic], inst, CAT) is None  # only emulated rows are checked


def test_combined_error_is_the_quadrature_sum_of_held_out_errors():
    combined, emu, ana = combined_error("llm_train")
    assert 0 < emu < 1 and 0 < ana < 1
    assert combined**2 == pytest.approx(emu**2 + ana**2)
