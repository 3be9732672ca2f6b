import unittest
from types import SimpleNamespace

from vsfio.children import Result, medians
from vsfio.report import SummaryRow, pair_rows, render_summary, render_table, run_label, table_row


def result(tool, order, iops, cpu_s, ios=None, **extra):
    figs = dict(tool=tool, order=order, iops=iops, ios=ios if ios is not None else int(iops * 10),
                measured_s=10.0, mean_ns=extra.get("mean_ns", 110_000.0), p50_ns=100_000, p99_ns=250_000,
                cpu_s=cpu_s, user_s=cpu_s * 0.25, sys_s=cpu_s * 0.75, self_cpu_s=cpu_s * 0.9, wall_s=10.2,
                other_cpu_s=extra.get("other_cpu_s", 0.5))
    return Result(**figs)


class TableRowTest(unittest.TestCase):
    def test_a_run_row_fills_the_columns_asked_for(self):
        r = result("iolab", 1, 100_000.0, 2.0)
        row = table_row(run_label(0, r), r.tool, r, ("iops", "usr_sys_s", "cpu_per_mio", "ios_per_cpu"))
        self.assertEqual((row.run, row.tool, row.iops, row.usr_sys_s), ("1 (1st)", "iolab", "100k", "0.50/1.50"))
        self.assertEqual((row.cpu_per_mio, row.ios_per_cpu), ("2.00", "500k"))
        self.assertEqual((row.mean_us, row.wall_s), ("", ""))  # not asked for: blank

    def test_a_ratio_row(self):
        a, b = result("iolab", 1, 100_000.0, 1.5), result("fio", 2, 80_000.0, 2.0)
        row = table_row("", "ratio", a, ("iops", "cpu_per_mio"), vs=b)
        self.assertEqual((row.iops, row.cpu_per_mio, row.cpu_s), ("1.25x", "0.60x", ""))

    def test_missing_figures_and_disturbed_runs(self):
        t = Result("t/io_uring", 3, 50_000.0, 500_000, 10.0, None, None, None, 1.0, 0.2, 0.8, None, 10.1, 0.4)
        row = table_row(run_label(1, t), t.tool, t, ("mean_us", "self_cpu_s", "other_cpu_s"), disturbed=True)
        self.assertEqual((row.run, row.mean_us, row.self_cpu_s, row.other_cpu_s), ("2 (3rd)", "-", "-", "0.40*"))

    def test_pair_rows_and_render(self):
        pairs = [(result("iolab", 1, 100_000.0, 2.0), result("fio", 2, 100_000.0, 4.0)),
                 (result("iolab", 2, 110_000.0, 2.0), result("fio", 1, 90_000.0, 4.0))]
        rows = pair_rows(pairs, ("ios_per_cpu",), ("ios_per_cpu",), disturbed={(1, "fio")})
        self.assertEqual([(r.run, r.tool) for r in rows],
                         [("1 (1st)", "iolab"), ("1 (2nd)", "fio"), ("", "ratio"),
                          ("2 (2nd)", "iolab"), ("2 (1st)", "fio"), ("", "ratio")])
        self.assertEqual(rows[2].ios_per_cpu, "2.00x")
        text = render_table(("ios_per_cpu",), rows[:3]).splitlines()
        self.assertEqual(text[0].split(), ["run", "tool", "I/Os", "per", "CPU-s"])
        self.assertEqual(text[2].split(), ["1", "(1st)", "iolab", "500k"])

    def test_medians_row(self):
        runs = [result("fio", 1, v, 2.0) for v in (90_000.0, 100_000.0, 130_000.0)]
        m = medians(runs)
        self.assertEqual(m.iops, 100_000.0)
        self.assertEqual(table_row("median", "fio", m, ("iops", "cpu_s")).iops, "100k")
        self.assertIsNone(medians([SimpleNamespace(**{f: None for f in vars(m)})]).iops)


class SummaryRowTest(unittest.TestCase):
    def test_render_by_name(self):
        rows = [SummaryRow("loop", "CPU s per M I/O", "1.50", "2.20", "0.68x", "<= 0.75x", "MET"),
                SummaryRow("zram aio", "FAILED", verdict="see above")]
        lines = render_summary(rows).splitlines()
        self.assertEqual(lines[0].split(), ["scenario", "metric", "iolab", "fio", "iolab/fio", "goal", "verdict"])
        self.assertEqual(lines[2].split(), ["loop", "CPU", "s", "per", "M", "I/O", "1.50", "2.20", "0.68x", "<=",
                                            "0.75x", "MET"])
        self.assertEqual(lines[3].split(), ["zram", "aio", "FAILED", "see", "above"])


if __name__ == "__main__":
    unittest.main()
