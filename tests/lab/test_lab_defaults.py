"""The lab's defaults are the same whether a script builds a MininetLab or a user runs the command line."""

import os

from topologies import mininet_lab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAR = os.path.join(REPO, "topologies", "star.yaml")


def test_results_go_down_the_tree_by_multicast_by_default_in_the_class_and_on_the_command_line(monkeypatch):
    """One RESULT per chunk leaves the server by default, whichever way the lab was started; --results
    unicast and an explicit PlanOptions still choose unicast."""
    from controller.planner import PlanOptions

    lab = mininet_lab.MininetLab(STAR, 2, log=lambda m: None)  # nothing starts before start()
    assert lab._options().result_mode == "multicast"
    assert lab._options(pool_size=64).pool_size == 64
    explicit = mininet_lab.MininetLab(STAR, 2, log=lambda m: None, plan_options=PlanOptions(result_mode="unicast"))
    assert explicit._options().result_mode == "unicast"

    seen = []

    class Recorder:
        """Stands for MininetLab in main(): records the plan options the command line chose, starts nothing."""

        def __init__(self, *args, plan_options=None, **kwargs):
            seen.append(plan_options)
            raise KeyboardInterrupt("recorded")

    monkeypatch.setattr(mininet_lab, "MininetLab", Recorder)
    monkeypatch.setattr(mininet_lab, "install_signal_handlers", lambda: None)
    assert mininet_lab.main([STAR, "--batch"]) == 130
    assert mininet_lab.main([STAR, "--batch", "--results", "unicast"]) == 130
    assert [options.result_mode for options in seen] == ["multicast", "unicast"]
