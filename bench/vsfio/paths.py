"""Where things are: the repository, its release binary, the scratch directory, t/io_uring."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_IOLAB = REPO / "target" / "release" / "iolab"
SCRATCH_DIR = REPO / "target" / "bench-scratch"
DEFAULT_TARGET = SCRATCH_DIR / "bench.dat"
NULL_FILE = SCRATCH_DIR / "null.dat"
# fio's own t/io_uring, issue 3's limit; bench/build_t_io_uring.sh builds it here.
DEFAULT_T_IO_URING = SCRATCH_DIR / "fio-3.33" / "t" / "io_uring"
T_IO_URING_NOT_BUILT = "t/io_uring not built: run bench/build_t_io_uring.sh"
