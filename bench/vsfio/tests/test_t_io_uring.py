import unittest

from vsfio.children import t_io_uring_count

OUTPUT = """Added file /dev/loop0 (submitter 0)
polled=0, fixedbufs=1, register_files=1, buffered=0, QD=32
Engine=io_uring, sq_ring=32, cq_ring=64
submitter=0, tid=12345, file=/dev/loop0, node=-1
IOPS=272.89K, BW=1065MiB/s, IOS/call=1/1
IOPS=270.11K, BW=1055MiB/s, IOS/call=1/1
IOPS=1.01M, BW=3945MiB/s, IOS/call=16/16
IOPS=900, BW=3MiB/s, IOS/call=1/1
Exiting on timeout
Maximum IOPS=1.01M
"""


class TIoUringCountTest(unittest.TestCase):
    def test_per_second_lines_and_the_last_second_at_their_mean(self):
        per_s, iops, ios = t_io_uring_count(OUTPUT, 5)
        self.assertEqual(per_s, [272_890.0, 270_110.0, 1_010_000.0, 900.0])  # not "Maximum IOPS="
        self.assertAlmostEqual(iops, sum(per_s) / 4)
        self.assertEqual(ios, round(sum(per_s) / 4 * 5))

    def test_no_iops_line(self):
        with self.assertRaises(ValueError):
            t_io_uring_count("io_uring_setup: Operation not permitted\n", 3)


if __name__ == "__main__":
    unittest.main()
