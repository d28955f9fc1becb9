#!/usr/bin/python3
"""Execute analysis notebooks with `jupyter nbconvert` and check that they show their figures.

    notebook_images.py NOTEBOOK.ipynb...           execute each into a temporary directory, then check it
    notebook_images.py --count EXECUTED.ipynb...   only count the images of already executed notebooks

A notebook passes when its executed copy holds at least one image/png output, and every code cell that saves
a figure (`.savefig(`) also shows one. Prints one line per notebook: its name, its image count and the seconds
it took. Exit status 0 when all pass, 1 otherwise, with a message that says what to do: a missing `jupyter`
command (jupyter-core, jupyter-nbconvert: `make deps`) fails, it does not skip.

The notebooks' own outputs (HDF5, PNG) go under the temporary directory too (CLUSTERSIM_OUTPUT_DIR); the
clustersim binary and the repository root come from CLUSTERSIM_BINARY and CLUSTERSIM_SOURCE_DIR, as the
notebooks read them. The kernel is the `python3` kernelspec, which must run /usr/bin/python3 (Debian's
python3-ipykernel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEPS_HINT = "install Debian's jupyter-core, jupyter-nbconvert and python3-ipykernel with `make deps` (as root)"
KERNEL_PYTHON = "/usr/bin/python3"


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def check_jupyter() -> None:
    """Fails (exit 1) unless there is a `jupyter` command and the python3 kernel is /usr/bin/python3."""
    if shutil.which("jupyter") is None:
        fail(f"no `jupyter` command on PATH: {DEPS_HINT}")
    spec = subprocess.run(
        [KERNEL_PYTHON, "-c", "from jupyter_client.kernelspec import KernelSpecManager as K; "
                              "import json; print(json.dumps(K().get_kernel_spec('python3').argv))"],
        capture_output=True, text=True, env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
    if spec.returncode != 0:
        fail(f"no python3 Jupyter kernel ({spec.stderr.strip()[-300:]}): {DEPS_HINT}")
    argv = json.loads(spec.stdout)
    if not argv or os.path.realpath(argv[0]) != os.path.realpath(KERNEL_PYTHON):
        fail(f"the python3 Jupyter kernel runs {argv[0] if argv else '?'}, not {KERNEL_PYTHON}: the notebooks "
             f"need Debian's packages; remove the other python3 kernelspec (`jupyter --paths` lists where "
             f"kernelspecs live) and {DEPS_HINT}")


def count_images(executed: Path) -> tuple[int, list[str]]:
    """(number of image/png outputs, first lines of the figure cells that show none)."""
    nb = json.loads(executed.read_text())
    images, blind = 0, []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        shown = sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
        images += shown
        if ".savefig(" in source and shown == 0:
            blind.append(source.splitlines()[0])
    return images, blind


def execute(notebook: Path, workdir: Path) -> Path:
    """Runs `jupyter nbconvert --to notebook --execute` on notebook; returns the executed copy in workdir."""
    # The kernel talks over IPC sockets in workdir, not TCP ports: with TCP, two notebooks started at once under
    # `ctest -j` could pick the same free port and one kernel died with "Address already in use" (CI, stop 37).
    runtime = workdir / "jupyter-runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CLUSTERSIM_OUTPUT_DIR=str(workdir / "outputs"), PYDEVD_DISABLE_FILE_VALIDATION="1",
               JUPYTER_RUNTIME_DIR=str(runtime))
    cmd = ["jupyter", "nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.kernel_name=python3",
           "--ExecutePreprocessor.timeout=280", "--KernelManager.transport=ipc", f"--KernelManager.ip={runtime}/k",
           "--output-dir", str(workdir), str(notebook)]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if "`jupyter-nbconvert` not found" in result.stderr:
        fail(f"`jupyter nbconvert` is not installed: {DEPS_HINT}")
    if result.returncode != 0:
        print(result.stdout[-4000:], result.stderr[-8000:], sep="\n", file=sys.stderr)
        fail(f"{notebook.name}: `{' '.join(cmd)}` exited with {result.returncode}")
    return workdir / notebook.name


def main(argv: list[str]) -> int:
    count_only = bool(argv) and argv[0] == "--count"
    notebooks = [Path(a) for a in (argv[1:] if count_only else argv)]
    if not notebooks:
        fail("usage: notebook_images.py [--count] NOTEBOOK.ipynb...")
    if not count_only:
        check_jupyter()
    failed = []
    for notebook in notebooks:
        start = time.monotonic()
        if count_only:
            images, blind = count_images(notebook)
        else:
            with tempfile.TemporaryDirectory(prefix=f"clustersim-{notebook.stem}-") as tmp:
                images, blind = count_images(execute(notebook, Path(tmp)))
        took = "" if count_only else f", executed in {time.monotonic() - start:.1f} s"
        print(f"{notebook.stem}: {images} images (image/png outputs){took}")
        if images == 0:
            failed.append(f"{notebook.name} shows no image")
        failed += [f"{notebook.name}: the cell '{first}' saves a figure but shows none (end it with plt.show())"
                   for first in blind]
    for message in failed:
        print(f"error: {message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
