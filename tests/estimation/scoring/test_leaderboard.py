"""estimation/leaderboard.py: who sees which systems (`build`, `visible_filter`,
`can_see`) and which states count, before any new score run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from estimation import leaderboard as lb
from submissions.models import ACTIVE_STATES, State, Submission
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def names(world: World, user: object) -> list[str]:
    return sorted(r.submission.name for r in lb.build(world.corpus, user).rows)


def test_a_private_system_is_shown_to_its_owner_and_staff_only(scored: World) -> None:
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    carol = make_user("carol")
    assert names(scored, AnonymousUser()) == ["Alpha"]
    assert names(scored, carol) == ["Alpha"]          # signed in is not enough
    assert names(scored, scored.a.owner) == ["Alpha"]  # nor owning another system
    assert names(scored, scored.b.owner) == ["Alpha", "Beta"]
    assert names(scored, make_user("root", staff=True)) == ["Alpha", "Beta"]
    [mine] = [r for r in lb.build(scored.corpus, scored.b.owner).rows if r.mine]
    assert mine.submission.name == "Beta"


@pytest.mark.parametrize("state", sorted(set(State.values) - ACTIVE_STATES))
def test_a_system_leaves_the_board_when_it_stops_counting(scored: World, state: str) -> None:
    """Withdrawn (or rejected, failed...) leaves at once: no score run in between."""
    run = lb.build(scored.corpus, AnonymousUser()).run
    Submission.objects.filter(pk=scored.b.pk).update(state=state)
    board = lb.build(scored.corpus, AnonymousUser())
    assert board.run == run and [r.submission.name for r in board.rows] == ["Alpha"]
    assert [r.rank for r in board.rows] == [1]


def test_visible_filter_and_can_see_agree(world: World) -> None:
    """The query (`build`) and the in-memory rule (stored boards) say the same for every
    viewer and row, and both hide a private row from everyone but its owner and staff."""
    Submission.objects.filter(pk=world.b.pk).update(public=False)
    rows = list(Submission.objects.values_list("name", "public", "owner_id"))
    viewers = {"anonymous": AnonymousUser(), "other": make_user("carol"),
               "a's owner": world.a.owner, "b's owner": world.b.owner,
               "staff": make_user("root", staff=True)}
    sees_beta = {"anonymous": False, "other": False, "a's owner": False, "b's owner": True,
                 "staff": True}
    for who, user in viewers.items():
        me = user.pk if user.is_authenticated else None
        in_memory = {n for n, public, owner in rows if lb.can_see(user.is_staff, me, public,
                                                                  owner)}
        queried = set(Submission.objects.filter(lb.visible_filter(user, prefix=""))
                      .values_list("name", flat=True))
        assert in_memory == queried == ({"Alpha", "Beta"} if sees_beta[who] else {"Alpha"}), who
