"""The wheel an operator installs: built from the repository's files, installed into a fresh virtual
environment outside the checkout, its ``dmq-node`` and ``dmq`` run a node and publish to it.

What is at stake in packaging is the project's own part: which packages, modules and data files
the wheel carries, and its two commands. The third-party dependencies are resolved by pip in the
development environment already, and downloading them again would make the test slow and need the
network. So the fresh environment gets them through a ``.pth`` file naming a directory of links
to the development environment's installed distributions, leaving out three things: this
project's editable install (its import hook and metadata, which would otherwise serve the
checkout's code), and the ``spark`` extra (pyspark, py4j, matplotlib), so that the core is
shown to run without it. Everything of the project's own that the node imports must then come
from the wheel: the test checks where every loaded module of the project's packages lives.

The wheel is built offline with the development environment's setuptools (no build isolation),
from a copy of the files git tracks, so the build never writes into the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.conftest import devnet_config
from tests.e2e.messages import DEVNET
from tests.e2e.node_process import NodeProcess

#: Top-level packages of the wheel (pyproject's ``packages.find``).
PROJECT_PACKAGES = ("dmq", "miniprotocols", "handshake", "ouroboros_mux", "topics", "clients", "apps", "lab", "spark")
#: Distributions of the ``spark`` extra and what they bring, left out of the fresh environment.
_SPARK_EXTRA = ("pyspark", "py4j", "matplotlib", "mpl_toolkits", "pylab")
#: Data files the code reads at run time beside its modules.
PACKAGE_DATA = ("spark/log4j2.properties",)


def _git_files() -> list[str]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        reason = "the wheel is built from the files git tracks: git or the repository is missing"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    listed = subprocess.run([git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]


def _build_wheel(work: Path) -> Path:
    source = work / "source"
    for name in _git_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(work / "dist"), str(source)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (work / "dist").glob("dmq_node-*.whl")
    return wheel


def _is_dependency(name: str) -> bool:
    """Whether an entry of the development site-packages goes into the fresh environment."""
    base = name.split("-", 1)[0].split(".", 1)[0].lower()
    if name.endswith(".pth") or name.startswith("__editable__") or base in ("__pycache__", "dmq_node"):
        return False
    return base not in PROJECT_PACKAGES and base not in _SPARK_EXTRA


@dataclass(frozen=True)
class Installed:
    prefix: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.prefix / "bin" / "python"

    def command(self, name: str) -> Path:
        return self.prefix / "bin" / name

    def run(self, argv: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=60,
                              env=_clean_environment())


def _clean_environment() -> dict[str, str]:
    """The caller's environment without anything pointing Python at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(work)
    prefix = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=60)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python"), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=120,
                          env=_clean_environment())
    assert done.returncode == 0, done.stdout + done.stderr

    dependencies = work / "dependencies"
    dependencies.mkdir()
    development = Path(sysconfig.get_path("purelib"))
    for entry in development.iterdir():
        if _is_dependency(entry.name):
            (dependencies / entry.name).symlink_to(entry)
    site = subprocess.run([str(prefix / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True, env=_clean_environment()).stdout.strip()
    assert list(Path(site).glob("dmq_node-*.dist-info")), "pip did not install the wheel into the fresh environment"
    (Path(site) / "dependencies-of-the-test.pth").write_text(f"{dependencies}\n")
    return Installed(prefix, wheel)


def test_the_wheel_holds_every_package_and_data_file(installed: Installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for data in PACKAGE_DATA:
        assert data in names, data
    tracked = {name for name in _git_files() if name.split("/", 1)[0] in PROJECT_PACKAGES and name.endswith(".py")}
    assert tracked <= names, sorted(tracked - names)[:5]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed.wheel).read(entry_points).decode()
    assert "dmq-node = dmq.cli.node:main" in text and "dmq = dmq.cli.tool:main" in text


_IMPORT_CHECK = """
import importlib.resources, json, sys
import dmq.cli.node, dmq.cli.tool, dmq.cli.wiring, dmq.node
# The node program loads nothing of the capacity pipeline, not even its option definitions.
node_spark = sorted(n for n in sys.modules if n.split(".")[0] == "spark")
dmq.cli.tool.build_parser()  # imports every sub-command module, as `dmq --help` does
project = {name: getattr(module, "__file__", None) or "" for name, module in sys.modules.items()
           if name.split(".")[0] in %r}
# Before the data check below, which imports the packages holding the files. The dmq command may
# read capacity-report's options from spark's light modules; Spark itself must not load.
heavy = sorted(n for n in sys.modules if n.split(".")[0] in ("pyspark", "py4j", "matplotlib"))
data = {path: importlib.resources.files(path.split("/")[0]).joinpath(path.split("/", 1)[1]).is_file()
        for path in %r}
try:
    import pyspark
    spark_missing = False
except ImportError:
    spark_missing = True
print(json.dumps({"project": project, "data": data, "spark_missing": spark_missing, "path": sys.path,
                  "heavy": heavy, "node_spark": node_spark}))
""" % (PROJECT_PACKAGES, PACKAGE_DATA)


def test_the_node_imports_only_the_installed_code_and_nothing_of_spark(installed: Installed, tmp_path):
    done = installed.run([installed.python, "-c", _IMPORT_CHECK], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["spark_missing"], "the environment was meant to lack the spark extra"
    assert found["heavy"] == []
    assert found["node_spark"] == []
    assert all(found["data"].values()), found["data"]
    outside = {name: path for name, path in found["project"].items()
               if not Path(path).resolve().is_relative_to(installed.prefix.resolve())}
    assert outside == {}, outside
    assert str(ROOT) not in found["path"]


def test_capacity_report_without_the_spark_extra_says_how_to_install_it(installed: Installed, tmp_path):
    done = installed.run([installed.command("dmq"), "capacity-report", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("dmq capacity-report: the Spark pipeline is unavailable")
    assert "pip install 'dmq-node[spark]'" in line


@dataclass
class _InstalledNode(NodeProcess):
    """The node started through the installed ``dmq-node`` script (not ``python -m``)."""

    program: Path | None = None

    def command(self) -> list[str]:
        return [str(self.program), *super().command()[3:]]


def test_installed_commands_run_a_node_publish_and_stop_it(installed: Installed, tmp_path, vectors, monkeypatch):
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)  # the node process inherits the environment
    workdir = tmp_path / "node"
    workdir.mkdir()
    shutil.copyfile(DEVNET / "shelley-genesis.json", workdir / "shelley-genesis.json")
    node = _InstalledNode(workdir, devnet_config(), program=installed.command("dmq-node"))
    try:
        node.start()
        version = installed.run([installed.command("dmq-node"), "--version"], cwd=workdir)
        assert version.stdout == "dmq-node version: 0.1.0\n"

        body = vectors["mithril_body"]["body"]
        done = installed.run([installed.command("dmq"), "publish", "--socket", node.socket_path, "--network", "devnet",
                              "--bulk-credentials", DEVNET / "bulk-creds-k2.json", "--kes-period", "0",
                              "--body-hex", body], cwd=workdir)
        assert (done.returncode, done.stdout, done.stderr) == (0, "accepted\n", "")

        done = installed.run([installed.command("dmq"), "db", "info", "--database-path", workdir / "db"], cwd=workdir)
        assert done.returncode == 0 and "messages:       1 " in done.stdout, done.stdout + done.stderr

        # What is checked is how it stops, not how fast: a loaded machine may take a while.
        node.kill(signal.SIGINT, timeout=60)
        assert node.process.returncode == 130, node.diagnostics()
        assert [event["reason"] for event in node.trace_events("NodeStopped")] == ["stopped"]
        assert "Traceback" not in node.stderr_path.read_text()
    finally:
        node.kill()
