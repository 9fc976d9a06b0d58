"""What a run imports and how it leaves the garbage collector (start-up cost: benchmarks/bench_run.py)."""

import gc
import json
import subprocess
import sys

from ecobench.cli import main
from tests.conftest import SCENARIOS

# Modules a run of the seed inference scenario never needs; each would cost start-up time.
NOT_IMPORTED = ["pandas", "torch", "transformers", "codecarbon", "matplotlib", "numpy.ma",
                "ecobench.hardware.backends.emulated", "ecobench.hardware.backends.torch_ref",
                "ecobench.hardware.published", "ecobench.validation.validate"]


def test_a_seed_run_imports_none_of_the_heavy_modules(tmp_path):
    code = ("import sys, json; from ecobench.cli import main; "
            f"rc = main(['run', {str(SCENARIOS / 'layoutlm_realtime.yaml')!r}, '-q', '--out', "
            f"{str(tmp_path / 'run')!r}]); "
            f"print(json.dumps([rc, [m for m in {NOT_IMPORTED!r} if m in sys.modules]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rc, imported = json.loads(out.stdout.splitlines()[-1])
    assert rc == 0
    assert imported == []


def test_main_gives_the_collector_back_as_it_found_it(tmp_path, capsys):
    assert gc.isenabled()
    rc = main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(tmp_path / "a")])
    assert rc == 0 and gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(tmp_path / "b")])
        assert not gc.isenabled() and gc.get_freeze_count() == 0
        main(["run", "no-such-file.yaml"])  # a failed command restores it too
        assert not gc.isenabled()
    finally:
        gc.enable()
    capsys.readouterr()
