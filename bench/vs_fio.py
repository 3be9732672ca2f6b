#!/usr/bin/env python3
"""Run iolab and fio side by side on the same target, in one run, and print the ratios.

A hand-run benchmark whose output goes into the notes; it is not a test. This launcher puts
bench/ on the import path and runs the package bench/vsfio (its __init__ lists the modules);
see bench/README.md for the scenarios, their goals and the noise rule. Python 3.11, standard
library only.
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing the package
sys.path.insert(0, str(Path(__file__).resolve().parent))
from vsfio.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
