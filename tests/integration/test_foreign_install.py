"""At start-up the command says, in one line, when another distribution uses the `ecobench` import name."""

import base64
import hashlib
import os
import subprocess
import sys
from importlib import metadata

import pytest

from ecobench.io import distribution
from ecobench.io.distribution import foreign_install
from tests.conftest import ROOT


def _dist_info(where, name, version, record=""):
    d = where / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (d / "RECORD").write_text(record)
    return d


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _site(tmp_path):
    """A site-packages holding a regular (not editable) install of ecobench-ml."""
    site = tmp_path / "site-packages"
    pkg = site / "ecobench"
    (pkg / "gate").mkdir(parents=True)
    init, cli = b'__version__ = "0.1.0"\n', b"# cli\n"
    (pkg / "__init__.py").write_bytes(init)
    (pkg / "cli.py").write_bytes(cli)
    (pkg / "gate" / "__init__.py").write_bytes(b"")
    (pkg / "__pycache__").mkdir()
    record = (f"ecobench/__init__.py,{_hash(init)},{len(init)}\necobench/cli.py,{_hash(cli)},{len(cli)}\n"
              "ecobench/gate/__init__.py,,0\necobench_ml-0.1.0.dist-info/RECORD,,\n")
    _dist_info(site, "ecobench-ml", "0.1.0", record)
    return site, pkg


def test_nothing_to_say_in_this_environment():
    assert foreign_install() is None


def test_the_unrelated_pypi_ecobench_is_named(tmp_path, monkeypatch):
    _dist_info(tmp_path, "ecobench", "1.0.1")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = foreign_install()
    assert "'ecobench' 1.0.1 (an unrelated PyPI project)" in line and "pip uninstall ecobench" in line
    assert "\n" not in line


def test_a_regular_install_of_ours_passes_and_strangers_are_named(tmp_path, monkeypatch):
    site, pkg = _site(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    assert metadata.distribution("ecobench-ml").locate_file("ecobench") == site / "ecobench"
    assert foreign_install(pkg) is None
    (pkg / "tracker.py").write_text("# someone else's\n")
    line = foreign_install(pkg)
    assert "files ecobench-ml 0.1.0 did not install (tracker.py)" in line
    (pkg / "tracker.py").unlink()
    (pkg / "__init__.py").write_text("# overwritten by another distribution\n")
    assert "an __init__.py that is not ecobench-ml's" in foreign_install(pkg)


def test_a_checkout_ahead_of_an_installed_copy_is_deliberate(tmp_path, monkeypatch):
    site, _ = _site(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    assert foreign_install(ROOT / "ecobench") is None


def test_a_package_in_site_packages_without_ecobench_ml(tmp_path, monkeypatch):
    real = metadata.distribution

    def without_ours(name):
        if name == "ecobench-ml":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(distribution.metadata, "distribution", without_ours)
    pkg = tmp_path / "lib" / "site-packages" / "ecobench"
    pkg.mkdir(parents=True)
    assert "does not belong to ecobench-ml" in foreign_install(pkg)
    assert foreign_install(ROOT / "ecobench") is None  # a source checkout


@pytest.mark.slow
def test_the_command_warns_in_one_line_and_goes_on(tmp_path):
    _dist_info(tmp_path, "ecobench", "1.0.1")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "ecobench", "catalog"], env=env, capture_output=True, text=True,
                       cwd=tmp_path, check=False)
    assert r.returncode == 0 and "catalog" in r.stdout
    warnings = [line for line in r.stderr.splitlines() if "unrelated PyPI project" in line]
    assert len(warnings) == 1 and warnings[0].startswith("ecobench: warning: ")
