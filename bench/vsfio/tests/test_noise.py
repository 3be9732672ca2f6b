import unittest
from statistics import mean

from vsfio.noise import (BEYOND, UNKNOWN, WITHIN, agreement_verdict, goal_verdict, noise_verdict, spread)


def diff_of_means(base, side):
    """The difference `iolab compare` judges: of the means of the repeats, as a fraction."""
    return (mean(side) - mean(base)) / mean(base)


class SpreadTest(unittest.TestCase):
    def test_range_over_mean(self):
        self.assertAlmostEqual(spread([1000.0, 1100.0, 950.0]), 150.0 / (3050.0 / 3.0))

    def test_needs_two_values(self):
        self.assertIsNone(spread([5.0]))
        self.assertIsNone(spread([5.0, None]))
        self.assertIsNone(spread([]))

    def test_zero_mean_has_no_spread(self):
        self.assertIsNone(spread([0.0, 0.0]))


class NoiseVerdictTest(unittest.TestCase):
    """The cases of crates/report/src/compare_tests.rs, which the rule must judge the same."""

    def judge(self, base, side):
        return noise_verdict(diff_of_means(base, side), base, side)

    def test_a_difference_inside_the_spread_is_within_noise(self):
        got = self.judge([1000.0, 1100.0, 950.0], [1020.0, 1080.0, 990.0])
        self.assertEqual(got.verdict, WITHIN)
        self.assertAlmostEqual(got.spread, 150.0 / (3050.0 / 3.0))  # the larger side's spread

    def test_a_difference_clear_of_both_ranges_is_beyond_noise(self):
        got = self.judge([1000.0, 1010.0, 990.0], [1500.0, 1510.0, 1490.0])
        self.assertEqual(got.verdict, BEYOND)
        self.assertAlmostEqual(got.spread, 0.02)

    def test_separate_ranges_are_not_enough_when_the_spread_is_larger(self):
        self.assertEqual(self.judge([1000.0, 1001.0, 1100.0], [1101.0, 1102.0, 1103.0]).verdict, WITHIN)

    def test_a_single_run_against_repeats(self):
        self.assertEqual(self.judge([1000.0, 1010.0, 990.0], [1100.0]).verdict, BEYOND)
        self.assertEqual(self.judge([1000.0, 1010.0, 990.0], [1015.0]).verdict, WITHIN)

    def test_one_run_a_side_is_unknown(self):
        got = self.judge([1000.0], [1500.0])
        self.assertEqual((got.verdict, got.spread), (UNKNOWN, None))

    def test_identical_repeats_have_no_spread_and_differ_beyond_it(self):
        self.assertEqual(self.judge([100.0, 100.0], [100.0, 100.0]).verdict, WITHIN)
        self.assertEqual(self.judge([100.0, 100.0], [101.0, 101.0]).verdict, BEYOND)

    def test_repeats_of_zero_are_within_noise(self):
        got = noise_verdict(None, [0.0, 0.0], [0.0, 0.0])
        self.assertEqual((got.verdict, got.spread), (WITHIN, None))

    def test_missing_figures_are_left_out(self):
        self.assertEqual(self.judge([1000.0], [1500.0]).verdict,
                         noise_verdict(0.5, [1000.0, None], [None, 1500.0]).verdict)


class GoalVerdictTest(unittest.TestCase):
    def test_met_on_the_median_ratio(self):
        v = goal_verdict([70.0, 72.0, 74.0], [100.0, 100.0, 101.0], 0.75, higher_is_better=False)
        self.assertEqual((v.met, v.text), (True, "MET"))

    def test_a_miss_inside_the_noise_is_met_within_noise(self):
        # iolab needs <= 75; it has 76 in the median, with a range overlapping 75 +- fio's spread.
        v = goal_verdict([74.0, 76.0, 80.0], [95.0, 100.0, 105.0], 0.75, higher_is_better=False)
        self.assertTrue(v.met)
        self.assertEqual(v.text, "MET within noise (spread 10.0%)")  # fio's (105 - 95) / 100, the larger

    def test_a_miss_beyond_the_noise_is_not_met(self):
        v = goal_verdict([90.0, 91.0, 92.0], [100.0, 100.5, 101.0], 0.75, higher_is_better=False)
        self.assertFalse(v.met)
        self.assertEqual(v.text, "NOT MET (beyond noise, spread 2.2%)")

    def test_higher_is_better(self):
        self.assertEqual(goal_verdict([2.1e6, 2.2e6], [1e6, 1e6], 2.0, True).text, "MET")
        self.assertEqual(goal_verdict([1.2e6, 1.21e6], [1e6, 1.01e6], 2.0, True).text[:7], "NOT MET")
        self.assertEqual(goal_verdict([0.97, 0.99, 1.01], [1.0, 1.01, 1.02], 1.0, True).text[:16],
                         "MET within noise")

    def test_one_repeat_is_noise_unknown(self):
        v = goal_verdict([80.0], [100.0], 0.75, higher_is_better=False)
        self.assertEqual((v.met, v.text), (False, "NOT MET (noise unknown: --repeat >= 2)"))

    def test_a_missing_figure_is_not_judged(self):
        self.assertEqual(goal_verdict([None], [100.0], 0.75, False).met, None)
        self.assertEqual(goal_verdict([1.0], [0.0], 0.75, False).text, "-")


class AgreementVerdictTest(unittest.TestCase):
    def test_agreement(self):
        self.assertEqual(agreement_verdict([1000.0, 1100.0, 950.0], [1020.0, 1080.0, 990.0]), "within noise")
        self.assertEqual(agreement_verdict([1500.0, 1510.0, 1490.0], [1000.0, 1010.0, 990.0]), "DIFFERS beyond noise")
        self.assertEqual(agreement_verdict([1500.0], [1000.0]), "noise unknown (--repeat >= 2)")
        self.assertEqual(agreement_verdict([None, None], [1000.0, 1000.0]), "-")


if __name__ == "__main__":
    unittest.main()
