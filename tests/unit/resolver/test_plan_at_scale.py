"""plan() over a fleet: repeated constraint sets share one resolution, and the incremental
driver-upgrade search finds the same driver as checking every candidate exhaustively."""

from dataclasses import replace

from cudaenv.resolver.plan import plan
from cudaenv.resolver.resolve import driver_candidates, host_problems, resolve, smallest_driver
from cudaenv.versions import numeric_key

from tests.unit.resolver.helpers import constraints, host, matrix

FLEET = [constraints(torch="2.6.0"), constraints(tensorflow="2.15.1"), constraints(torch=">=2.4"),
         constraints(torch="2.9.0"), constraints(jax=">=0.4.30")]


def _exhaustive_smallest_driver(sets, on):
    current = numeric_key(on.driver)
    for candidate in driver_candidates(matrix()):
        trial = replace(on, driver=candidate)
        if numeric_key(candidate) <= current or host_problems(matrix(), trial):
            continue
        if all(resolve(matrix(), c, trial, explain=False).ok for c in sets):
            return candidate
    return None


def test_projects_with_equal_constraints_share_one_resolution_object():
    on = host("535.104.05", ["RTX 3090"])
    projects = [(f"p{i}", constraints(torch="2.6.0")) for i in range(5)]
    result = plan(matrix(), projects, on)
    assert len({id(p.resolution) for p in result.projects}) == 1
    assert result.projects[0].resolution == resolve(matrix(), constraints(torch="2.6.0"), on)


def test_plan_of_a_repeated_fleet_equals_plan_of_each_project_resolved_on_its_own():
    on = host("470.82.01", ["RTX 3090"])
    projects = [(f"p{i}", FLEET[i % len(FLEET)]) for i in range(20)]
    result = plan(matrix(), projects, on)
    for (name, c), planned in zip(projects, result.projects):
        assert planned.name == name
        assert planned.resolution == resolve(matrix(), c, on)
    assert not result.ok
    assert result.driver_upgrade == _exhaustive_smallest_driver(FLEET, on)
    assert result.driver_upgrade is not None


def test_incremental_upgrade_search_does_not_depend_on_the_order_of_projects():
    on = host("470.82.01", ["RTX 3090"])
    expected = _exhaustive_smallest_driver(FLEET, on)
    assert smallest_driver(matrix(), FLEET, on) == expected
    assert smallest_driver(matrix(), list(reversed(FLEET)) * 3, on) == expected
