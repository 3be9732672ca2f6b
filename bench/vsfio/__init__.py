"""iolab and fio side by side: the package behind bench/vs_fio.py (see bench/README.md).

Modules, by responsibility:

- paths: where the binaries, the scratch directory and the default targets are;
- units: sizes, number formatting, medians and ratios (pure);
- noise: the one noise rule (the same as `iolab compare`'s) and the goals judged with it;
- report: printing, the rows of a block's table and of the summary, block headers;
- children: running a tool as a child process, its rusage, and parsing its output;
- targets: the file or device read, scratch loop/zram devices, the safety checks;
- commands: the iolab, fio and t/io_uring command lines;
- session: the state of one invocation (arguments, running child, blocks shown, best options);
- runs: pairs in alternating order, resting for a quiet machine, re-running while noisy;
- basic: the null, randread-file, agreement and psync scenarios;
- best: the search for each tool's best io_uring configuration;
- speed: issue 3's speed scenarios (loop, loop-best, virtio, zram, zram-qd1-latency, workers2);
- cli: the command line and the run of all scenarios.

Python 3.11 standard library only. The tests (vsfio/tests) run with
`python3 -m unittest discover -s bench` from the repository's root.
"""
