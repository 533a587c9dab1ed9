"""Holm step-down against a hand example and statsmodels."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from structablate.stats import holm


def test_holm_hand_example():
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> running max .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.4]) == pytest.approx([0.8, 0.8])  # running max
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # 1.2 clipped
    assert holm([0.2]) == pytest.approx([0.2])


@pytest.mark.parametrize("seed", range(2))
def test_holm_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    for m in (1, 2, 4, 7):
        p = rng.uniform(0, 0.2, size=m) ** 2
        if m > 2:
            p[1] = p[0]  # a tie
        expected = multipletests(p, method="holm")[1]
        np.testing.assert_allclose(holm(p), expected, rtol=0, atol=1e-15)


def test_holm_rejects_nan():
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])
