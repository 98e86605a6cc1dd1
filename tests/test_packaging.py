"""The built wheel works as well as the editable install: one package, `ctmc`, that finds
its models by name from any folder and loads a user's spec from the user's folder.

The wheel is built from this checkout and installed into a fresh virtual environment.
Its dependencies (numpy, z3, pyspark, ...) are not downloaded again: a `.pth` file
lends the fresh environment this one's site-packages, after its own, so the wheel's
`ctmc` is the one imported (this environment's editable install is not active there:
`.pth` files of a lent folder are not run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (found,) = out.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed; its bin folder."""
    env = tmp_path_factory.mktemp("env")
    venv.create(env, with_pip=False)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"),
                              "install", "--no-deps", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    purelib = Path(sysconfig.get_paths(vars={"base": str(env), "platbase": str(env)})["purelib"])
    (purelib / "lent-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env / "bin"


def test_the_wheel_installs_one_package(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/")[0] for name in archive.namelist()}
        names = set(archive.namelist())
    assert {t for t in top if not t.endswith(".dist-info")} == {"ctmc"}
    for shipped in ("ctmc/_project/cli.py", "ctmc/_project/models/tracker_small.toml",
                    "ctmc/_project/bench/models/tracker_bench_small.toml",
                    "ctmc/_project/checker/run.py", "ctmc/_project/spec/tracker.py",
                    "ctmc/_project/checker/traces/page/viewer.js",
                    "ctmc/_project/checker/traces/page/viewer.css"):
        assert shipped in names, shipped


def test_the_installed_ctmc_checks_models_by_name_from_any_folder(installed: Path, tmp_path):
    where = subprocess.run([installed / "python", "-c", "import ctmc, checker; "
                            "print(checker.__file__)"], cwd=tmp_path, capture_output=True,
                           text=True)
    assert "/ctmc/_project/checker/" in where.stdout, where.stdout + where.stderr
    version = subprocess.run([installed / "ctmc", "--version"], capture_output=True, text=True)
    assert version.stdout.strip().startswith("ctmc ")
    for model in ("tracker_small", "tracker_bench_small"):  # a model, a benchmark model
        run = subprocess.run([installed / "ctmc", "check", model, "--quiet"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "holds" in run.stdout


def test_the_installed_ctmc_loads_a_user_spec(installed: Path, tmp_path):
    shutil.copytree(ROOT / "examples" / "mutex", tmp_path / "mutex")
    run = subprocess.run([installed / "ctmc", "check", "mutex/mutex_check_then_set.toml",
                          "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "invariant MutualExclusion violated" in run.stdout
    trace = next((tmp_path / "traces").glob("*.itf.json"))
    page = subprocess.run([installed / "ctmc", "trace", "html", str(trace), "-o", "page.html"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert page.returncode == 0, page.stdout + page.stderr
    text = (tmp_path / "page.html").read_text()
    assert "function svg(" in text and "--accent" in text  # the viewer's script and style


def test_the_readme_snippet_runs_from_the_installed_wheel(installed: Path, tmp_path):
    """The README's Python snippet finds its model by name from any folder, as the CLI
    does, with ctmc installed from its wheel."""
    from tests.test_readme import readme_snippet

    snippet, printed = readme_snippet()
    run = subprocess.run([installed / "python", "-c", snippet], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == printed.split()
