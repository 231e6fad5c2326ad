import numpy as np
import pytest

from estimation.core import SCHEMES, sample_draws, scheme_weights

PREDS = np.array([0, 0, 0, 1, 2, 2])
SUBJ = np.array([7, 7, 8, 8, 8, 9])


def test_instance_is_uniform():
    np.testing.assert_allclose(
        scheme_weights("instance", PREDS, SUBJ), np.full(6, 1 / 6)
    )


def test_predicate_macro():
    # 3 predicates; predicate 0 has 3 instances, 1 has 1, 2 has 2.
    expected = [1 / 9, 1 / 9, 1 / 9, 1 / 3, 1 / 6, 1 / 6]
    np.testing.assert_allclose(scheme_weights("predicate", PREDS, SUBJ), expected)


def test_entity_macro():
    # 3 subjects with 2, 3 and 1 instances.
    expected = [1 / 6, 1 / 6, 1 / 9, 1 / 9, 1 / 9, 1 / 3]
    np.testing.assert_allclose(scheme_weights("entity", PREDS, SUBJ), expected)


def test_entity_relation():
    # Subject 7: one relation (pred 0, 2 instances); subject 8: relations 0, 1, 2
    # with one instance each; subject 9: one relation with one instance.
    expected = [1 / 6, 1 / 6, 1 / 9, 1 / 9, 1 / 9, 1 / 3]
    np.testing.assert_allclose(scheme_weights("entity_relation", PREDS, SUBJ), expected)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_counts_match_repeated_elements(scheme):
    # Multiplicities are the same as listing an element several times.
    counts = np.array([[2, 0, 1, 1, 3, 1]])
    repeated = np.repeat(np.arange(6), counts[0])
    direct = scheme_weights(scheme, PREDS[repeated], SUBJ[repeated])
    via_counts = scheme_weights(scheme, PREDS, SUBJ, counts)[0]
    np.testing.assert_allclose(
        np.bincount(repeated, weights=direct, minlength=6), via_counts
    )
    assert via_counts[1] == 0
    assert via_counts.sum() == pytest.approx(1)


def test_sample_draws_frequencies():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    n = 20_000
    draws = sample_draws(p, n, np.random.default_rng(0))
    freq = np.bincount(draws, minlength=4) / n
    # Each frequency within 4 standard errors of its probability.
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / n))
    assert len(sample_draws(p, 0, np.random.default_rng(0))) == 0
