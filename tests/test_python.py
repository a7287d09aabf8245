"""A fresh interpreter of the running ``sweep`` (``sweep/_python.py``): never the working
folder's ``sweep``, whatever the working folder holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sweep
from sweep._python import package_parent, python_code, python_env, python_module

from .conftest import DECOY_MESSAGE

_WHICH = "import sweep\nprint(sweep.__file__)\n"


def test_plain_python_c_would_import_the_decoy(decoy_cwd: Path) -> None:
    # The premise: what `python -c` and `python -m` do by themselves in such a folder.
    plain = subprocess.run(
        [sys.executable, "-c", _WHICH], env=python_env(), capture_output=True, text=True, check=False
    )
    assert plain.returncode != 0 and DECOY_MESSAGE in plain.stderr


def test_code_imports_the_running_sweep_from_a_decoy_folder(decoy_cwd: Path) -> None:
    run = subprocess.run(
        [*python_code(_WHICH), "an", "argument"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == sweep.__file__


def test_a_module_runs_as_main_with_its_arguments(decoy_cwd: Path, tmp_path: Path) -> None:
    out = tmp_path / "argv.txt"
    mod = tmp_path / "lib" / "sweep_argv_probe.py"
    mod.parent.mkdir()
    mod.write_text(
        "import sys\nimport sweep\n"
        "if __name__ == '__main__':\n"
        "    open(sys.argv[1], 'w').write(' '.join(sys.argv[2:]) + '|' + sweep.__file__)\n"
    )
    env = python_env({**os.environ, "PYTHONPATH": str(mod.parent)})
    run = subprocess.run(
        [*python_module("sweep_argv_probe"), str(out), "a", "b"], env=env, capture_output=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text() == f"a b|{sweep.__file__}"


def test_the_package_folder_goes_first_on_pythonpath_and_the_rest_stays() -> None:
    env = python_env({"PYTHONPATH": os.pathsep.join(["/x", "/y"]), "OTHER": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [package_parent(), "/x", "/y"]
    assert env["OTHER"] == "1"
    assert python_env({})["PYTHONPATH"] == package_parent()
    assert Path(package_parent(), "sweep", "__init__.py").resolve() == Path(sweep.__file__).resolve()
