#!/usr/bin/env python3
"""The quick start's first path, kept: ``python3 workflow/bootstrap.py run|test|ui|setup`` runs
setup/bootstrap.py with the same arguments (the set-up tooling lives in setup/, apart from the
workflow's rules)."""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.argv[0] = str(Path(__file__).resolve().parents[1] / "setup" / "bootstrap.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
