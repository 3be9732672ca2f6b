"""The state one invocation of vs_fio.py shares between its scenarios, passed to each of them
instead of module-level globals."""

import shlex

from .children import Runner
from .cpu_idle import IdlePolicy
from .paths import SCRATCH_DIR
from .targets import Targets


class Session:
    """The arguments, the runner of the measured children (the one object the clean-up after a
    signal reaches the running child through), the targets, the blocks shown so far (for the
    summary), and each tool's best configuration once measured."""

    def __init__(self, args):
        self.args = args
        self.cwd = SCRATCH_DIR
        self.runner = Runner(SCRATCH_DIR)
        self.idle = IdlePolicy(args.cpu_idle)
        self.targets = Targets(args, stop_children=self.runner.stop)
        self.shown_as = {}  # the iolab snapshot -> the binary it copies, so printed commands can be rerun
        self.blocks = []  # (block title, target, [(tool, command)]) for the summary
        self.best = {}  # (tool, target path, QD) -> (options, description)
        self.probes = []  # (label, target, [(variant, CPU s per M I/O, IOPS)], choice), for the summary

    def shown(self, cmd):
        """A command line as printed: the snapshot of iolab shown as the binary it copies."""
        return shlex.join([self.shown_as.get(cmd[0], cmd[0])] + list(cmd[1:]))
