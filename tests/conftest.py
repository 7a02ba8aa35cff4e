"""Process settings of the suite: Python's bytecode cache is on for the test processes and every
process they start (the CLI's subprocesses, the process pool's and the Dask cluster's workers),
as it is by default. Where the environment turns it off (``PYTHONDONTWRITEBYTECODE``), each of
those processes would compile vmp's modules again from source (about 0.5 s of CPU each)."""

import os
import sys

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
