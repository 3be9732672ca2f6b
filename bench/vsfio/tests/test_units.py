import unittest

from vsfio.units import fmt_num, fmt_pct, fmt_ratio, fmt_us, human_size, median, parse_size, range_text, table


class SizeTest(unittest.TestCase):
    def test_parse_binary_units(self):
        self.assertEqual(parse_size("1g"), 1 << 30)
        self.assertEqual(parse_size("1G"), 1 << 30)
        self.assertEqual(parse_size("1GiB"), 1 << 30)
        self.assertEqual(parse_size("512m"), 512 << 20)
        self.assertEqual(parse_size("4kb"), 4096)
        self.assertEqual(parse_size("1.5g"), 3 << 29)
        self.assertEqual(parse_size(" 4096 "), 4096)
        self.assertEqual(parse_size("2t"), 2 << 40)

    def test_parse_rejects_junk(self):
        with self.assertRaises(ValueError):
            parse_size("lots")

    def test_human_size(self):
        self.assertEqual(human_size(1 << 30), "1 GiB")
        self.assertEqual(human_size(1536 << 20), "1536 MiB")
        self.assertEqual(human_size(4096), "4 KiB")
        self.assertEqual(human_size(1000), "1000 B")
        self.assertEqual(human_size(parse_size("1g")), "1 GiB")


class FormatTest(unittest.TestCase):
    def test_fmt_num(self):
        self.assertEqual(fmt_num(None), "-")
        self.assertEqual(fmt_num(12), "12")
        self.assertEqual(fmt_num(12.5), "12.5")
        self.assertEqual(fmt_num(1234567), "1.23M")
        self.assertEqual(fmt_num(272890), "273k")
        self.assertEqual(fmt_num(30.5e6), "30.5M")
        self.assertEqual(fmt_num(2e9), "2.00G")

    def test_fmt_us(self):
        self.assertEqual(fmt_us(None), "-")
        self.assertEqual(fmt_us(1234), "1.23")
        self.assertEqual(fmt_us(123456), "123.5")

    def test_ratios_and_percentages(self):
        self.assertEqual(fmt_ratio(0.7412), "0.74x")
        self.assertEqual(fmt_ratio(None), "-")
        self.assertEqual(fmt_pct(0.031), "+3.1%")
        self.assertEqual(fmt_pct(-0.1), "-10.0%")
        self.assertEqual(range_text([0.78, None, 0.71]), "0.71x..0.78x")
        self.assertEqual(range_text([0.7]), "0.70x")
        self.assertEqual(range_text([None]), "-")

    def test_median_skips_missing(self):
        self.assertEqual(median([3, None, 1, 2]), 2)
        self.assertIsNone(median([None]))

    def test_table(self):
        self.assertEqual(table(["a", "bb"], [["xyz", 1]]), "  a    bb\n  ---  --\n  xyz   1")


if __name__ == "__main__":
    unittest.main()
