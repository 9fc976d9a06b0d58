import json
from pathlib import Path

import pytest

from ecobench.cli import main
from ecobench.errors import InputError
from ecobench.hardware.catalog import chip_max_range
from ecobench.measure.neuron_sysfs import (
    INVALID,
    MISSING,
    NO_DATA,
    VALID,
    NeuronEnergy,
    read_tree,
    sample,
)


def fake_tree(root: Path, lines: dict[int, str | None]) -> Path:
    """neuronN folders with a utilization file holding ``line`` (None: no file)."""
    for n, line in lines.items():
        d = root / f"neuron{n}" / "stats" / "power"
        d.mkdir(parents=True, exist_ok=True)
        if line is not None:
            (d / "utilization").write_text(line + "\n")
    return root


def test_reads_every_status_and_counts_only_valid_minutes(tmp_path):
    root = fake_tree(tmp_path, {0: f"{VALID},1700000000,10.00,90.00,40.00", 1: f"{NO_DATA},1700000000,0,0,0",
                                2: f"{INVALID},1700000000,0,0,0", 3: None})
    readings = read_tree(root)
    assert [r.status for r in readings] == [VALID, NO_DATA, INVALID, MISSING]
    assert readings[0].avg_pct == 40.0 and readings[0].timestamp == 1700000000
    acc = NeuronEnergy((100.0, 200.0, 300.0))
    acc.add(readings)
    assert acc.skipped == {NO_DATA: 1, INVALID: 1, MISSING: 1}
    # One minute at 40% of 200 W: 0.4 x 200 W x 60 s = 4,800 J.
    assert acc.energy_j(200.0) == pytest.approx(4800.0)
    lo, mid, hi = acc.energy_kwh()
    assert (lo, mid, hi) == pytest.approx((2400 / 3.6e6, 4800 / 3.6e6, 7200 / 3.6e6))


def test_a_minute_read_twice_counts_once_and_new_minutes_add(tmp_path):
    root = fake_tree(tmp_path, {0: f"{VALID},1700000000,0,0,50.00"})
    stamps = iter([1700000000, 1700000060])  # the driver updates once a minute

    def tick(_seconds):
        (root / "neuron0/stats/power/utilization").write_text(f"{VALID},{next(stamps)},0,0,25.00\n")

    acc = sample(root, 2, (100.0, 100.0, 100.0), sleep=tick)
    # minutes: 1700000000 (last written 25%) and 1700000060 (25%); the repeat is not double counted.
    assert sorted(acc.minutes) == [("neuron0", 1700000000), ("neuron0", 1700000060)]
    assert acc.energy_j(100.0) == pytest.approx(2 * 0.25 * 100 * 60)


@pytest.mark.parametrize("line,match", [
    ("POWER_STATUS_VALID,1700000000,10,90", "4 fields.*expected 5"),
    ("POWER_STATUS_BUSY,1700000000,0,0,0", "field status .*allowed: POWER_STATUS_VALID"),
    ("POWER_STATUS_VALID,yesterday,0,0,1", "field timestamp"),
    ("POWER_STATUS_VALID,1700000000,0,0,101", "field avg is 101.0; allowed: 0.00-100.00"),
    ("POWER_STATUS_VALID,1700000000,0,nan,1", "field max is nan"),
])
def test_malformed_files_name_file_field_and_format(tmp_path, line, match):
    root = fake_tree(tmp_path, {0: line})
    with pytest.raises(InputError, match=match) as err:
        read_tree(root)
    assert "neuron0/stats/power/utilization" in str(err.value)


def test_unreadable_trees_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no Neuron sysfs tree"):
        read_tree(tmp_path / "absent")
    with pytest.raises(InputError, match="no neuronN device folders"):
        read_tree(tmp_path)
    with pytest.raises(InputError, match="no device has stats/power/utilization"):
        read_tree(fake_tree(tmp_path / "t", {0: None, 1: None}))


def test_chip_range_is_the_catalog_evidence_range():
    assert chip_max_range("trainium") == (132.7, 243.6, 284.9)
    with pytest.raises(InputError, match="allowed: inferentia, inferentia2, trainium, trainium2"):
        chip_max_range("a100-40gb")


def test_cli_reports_energy_and_exits_2_on_bad_input(tmp_path, capsys):
    root = fake_tree(tmp_path / "sys", {0: f"{VALID},1700000000,0,0,50.00",
                                        1: f"{VALID},1700000000,0,0,10.00"})
    assert main(["neuron-power", "--sysfs", str(root), "--max-w", "400", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["energy_kwh"]["central"] == pytest.approx((0.5 + 0.1) * 400 * 60 / 3.6e6)
    assert doc["valid_minutes"] == {"neuron0": 1, "neuron1": 1}
    assert main(["neuron-power", "--sysfs", str(tmp_path / "absent"), "--chip", "trainium"]) == 2
    assert "no Neuron sysfs tree" in capsys.readouterr().err
    assert main(["neuron-power", "--sysfs", str(root)]) == 2  # neither --chip nor --max-w
    assert "neuron-power: neither given; allowed: one of --chip" in capsys.readouterr().err  # was: 'not both'
    assert main(["neuron-power", "--sysfs", str(root), "--chip", "trainium", "--max-w", "400"]) == 2
    assert "neuron-power: both given; allowed: one of --chip" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["neuron-power", "--sysfs", str(root), "--max-w", "-5"])
    assert exit_.value.code == 2
    assert "allowed: a finite number of watts above 0" in capsys.readouterr().err


@pytest.mark.parametrize("value,expect", [
    ("-1", "'-1' is out of range; allowed: a whole number of minutes from 0 to 1,440"),
    ("1441", "'1441' is out of range; allowed: a whole number of minutes from 0 to 1,440"),
    ("ten", "'ten' is not a whole number; allowed: a whole number of minutes from 0 to 1,440"),
])
def test_minutes_out_of_range_says_the_range_not_every_value(capsys, value, expect):
    """argparse's choices printed all 1,441 allowed values (7.6 KB) for --minutes -1."""
    with pytest.raises(SystemExit) as exc:
        main(["neuron-power", "--max-w", "100", f"--minutes={value}"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and expect in err and len(err) < 300, err


@pytest.mark.parametrize("above", ["devices/virtual/neuron_device", "virtual/neuron_device", "neuron_device"])
def test_a_folder_above_the_device_tree_names_the_tree(tmp_path, above):
    """trial18: --sysfs /sys (or a copy of it) said only 'no neuronN device folders'; the folder that
    holds them is below it."""
    tree = fake_tree(tmp_path / above, {0: "POWER_STATUS_VALID,1700000000,0,0,1"})
    with pytest.raises(InputError) as err:
        read_tree(tmp_path)
    assert str(err.value) == (f"{tmp_path}: no neuronN device folders (expected neuron0, neuron1, ...); "
                              f"allowed: the folder that holds them, {tree}")
    assert len(read_tree(tree)) == 1


@pytest.mark.parametrize("value", ["1e9", "10000.5"])
def test_a_device_maximum_beyond_the_scenarios_bound_is_refused(capsys, value):
    """--max-w 1e9 reported 300,000,000 W for a device at 30% and 5,000 kWh for one minute (exit 0); a
    device's maximum has the bound of a scenario's overrides.accelerator_power_w.*.max_w (10,000 W)."""
    with pytest.raises(SystemExit) as exc:
        main(["neuron-power", "--max-w", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"'{value}': allowed: a finite number of watts above 0 and at most 10,000" in err, err
