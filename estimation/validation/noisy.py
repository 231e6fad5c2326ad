"""Noisy-crowd scenarios: the paper's setting labelled by a simulated crowd.

Labels come from workers at 0, 10 and 20% error with 10% spammers (random errors, or
systematic blind spots), three answers a question and up to two more on ties — the
production rule. ``crowdNN`` scenarios estimate with soft labels (the correction);
``crowdNN_raw`` (UNCORRECTED, run only when named) with the crowd's majority labels,
as before the correction. Truth
is the world's, never the crowd's: these check that the scores are honest to the
truth. The exhaustive sample stays exact (imported gold). Target |bias| ≤ 0.01.
"""

from __future__ import annotations

from .battery import Scenario
from .crowd import CrowdSpec
from .worlds import WorldSpec

NOISY_BIAS = 0.01


def _crowd(name: str, description: str, crowd: CrowdSpec, correct: bool = True,
           estimator: str = "importance") -> Scenario:
    return Scenario(name, description, WorldSpec(), crowd=crowd, correct=correct,
                    max_bias=NOISY_BIAS, estimator=estimator)


# A yes-biased crowd (issue 38): two attractive relations (the world's most frequent)
# that each honest worker names on 20-60% of the questions offering them whose pair
# holds no relation, its own rate per relation; 5% other errors; 10% spammers. The crowd
# model's false-yes rates per worker and relation (annotations.quality.rates
# .false_yes_rates) correct it (docs/internals/crowd-bias.md §7).
ATTRACTIVE = CrowdSpec(error_rate=0.05, attractive=2)

NOISY: dict[str, Scenario] = {
    s.name: s
    for s in (
        _crowd("crowd00", "perfect workers, 10% spammers; soft labels",
               CrowdSpec(error_rate=0.0)),
        _crowd("crowd10", "10% worker error, 10% spammers; soft labels",
               CrowdSpec(error_rate=0.1)),
        _crowd("crowd20", "20% worker error, 10% spammers; soft labels",
               CrowdSpec(error_rate=0.2)),
        _crowd("crowd20_sys", "20% systematic error (blind spots), 10% spammers; soft labels",
               CrowdSpec(error_rate=0.2, systematic=True)),
        _crowd("crowd_attr", "two attractive relations said on 20-60% of the pairs "
               "holding none, per worker, 5% other error, 10% spammers; soft labels", ATTRACTIVE),
        _crowd("crowd20_distinct", "crowd20 with the distinct-pairs estimator (soft labels, "
               "its own replicates)", CrowdSpec(error_rate=0.2), estimator="distinct"),
        _crowd("crowd_attr_distinct", "crowd_attr with the distinct-pairs estimator",
               ATTRACTIVE, estimator="distinct"),
    )
}

# The same crowds without the correction: the "before" of the noisy scenarios. They
# fail the battery's checks (that is their point), so they run only when named.
UNCORRECTED: dict[str, Scenario] = {
    s.name: s
    for s in (
        _crowd("crowd10_raw", "10% worker error, 10% spammers; majority labels (no correction)",
               CrowdSpec(error_rate=0.1, control_share=0.0), correct=False),
        _crowd("crowd20_raw", "20% worker error, 10% spammers; majority labels (no correction)",
               CrowdSpec(error_rate=0.2, control_share=0.0), correct=False),
        _crowd("crowd20_sys_raw",
               "20% systematic error, 10% spammers; majority labels (no correction)",
               CrowdSpec(error_rate=0.2, systematic=True, control_share=0.0), correct=False),
        _crowd("crowd_attr_raw", "the yes-biased crowd; majority labels (no correction)",
               ATTRACTIVE, correct=False),
    )
}

# Scenarios the estimators do not pass yet (run only when named): none at present.
OPEN: dict[str, Scenario] = {}
