"""The lab's defaults are the same whether a script builds a MininetLab or a user runs the command line."""

import os

import pytest

from topologies import mininet_lab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAR = os.path.join(REPO, "topologies", "star.yaml")


def test_results_go_down_the_tree_by_multicast_by_default_in_the_class_and_on_the_command_line(monkeypatch):
    """One RESULT per chunk leaves the server by default, whichever way the lab was started; --results
    unicast and an explicit PlanOptions(result_mode="unicast") still choose unicast."""
    from controller.planner import PlanOptions

    lab = mininet_lab.MininetLab(STAR, 2, log=lambda m: None)  # nothing starts before start()
    assert lab.control.options().result_mode == "multicast"
    # PlanOptions given without a result mode (as the benches give a pool size) keep the same default
    given = mininet_lab.MininetLab(STAR, 2, log=lambda m: None, plan_options=PlanOptions(pool_size=32))
    assert given.control.options().result_mode == "multicast"
    assert lab.control.options(pool_size=64).pool_size == 64
    explicit = mininet_lab.MininetLab(STAR, 2, log=lambda m: None, plan_options=PlanOptions(result_mode="unicast"))
    assert explicit.control.options().result_mode == "unicast"

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


def test_one_result_mode_default_for_the_controller_and_the_in_process_network():
    """Where nobody chooses, the controller plans multicast results as the lab does: PlanOptions (the
    in-process lab's and the benches' default), inactl and the in-process network service (their
    default was unicast: they measured another system than the mininet lab)."""
    import argparse

    from controller.cli import build_parser
    from controller.options import DEFAULT_RESULT_MODE, PlanOptions
    from topologies.inprocess import serve

    assert DEFAULT_RESULT_MODE == "multicast" and PlanOptions().result_mode == DEFAULT_RESULT_MODE
    assert build_parser().parse_args(["plan", STAR, "--workers", "h1", "--servers", "h3"]).result_mode == "multicast"
    service = argparse.ArgumentParser()
    serve.add_arguments(service)
    assert service.parse_args([STAR]).result_mode == "multicast"


def test_the_lab_runs_the_largest_k_its_links_carry_unless_told(tmp_path):
    """No --program: K = 344 on the shipped 1500-byte links, K = 1024 where every link has mtu 9000; a named
    program still wins, and the links take the MTU its packets need."""
    from controller.topology_yaml import load_topology, save_topology

    lab = mininet_lab.MininetLab(STAR, 2, log=lambda m: None)  # nothing starts before start()
    assert os.path.basename(lab.network.program) == "ina_k344.p4" and lab.network.mtu == 1500
    topo = load_topology(STAR)
    for link in topo.links:
        link.mtu = 9000
    jumbo = tmp_path / "star_jumbo.yaml"
    save_topology(topo, jumbo)
    lab = mininet_lab.MininetLab(str(jumbo), 2, log=lambda m: None)
    assert os.path.basename(lab.network.program) == "ina_k1024.p4" and lab.network.link_mtus == [9000] * 5
    named = mininet_lab.MininetLab(STAR, 2, program="v1model", log=lambda m: None)
    assert os.path.basename(named.network.program) == "ina.p4"
    raised = mininet_lab.MininetLab(STAR, 2, program="v1model-k1024", log=lambda m: None)
    assert raised.network.mtu == 9000


def test_the_lab_command_line_speaks_the_shared_vocabulary(capsys):
    """The lab takes --workers as words, comma-separated or a count, --server/--servers and --result-mode as
    inactl and the demo do (docs/cli.md); --results still works after a one-line warning."""
    parser = mininet_lab.build_parser()

    def lab(*argv):
        return mininet_lab.make_lab(parser.parse_args([STAR, *argv]))  # nothing starts before start()

    words = lab("--workers", "h4", "h2", "--servers", "h1", "--result-mode", "unicast")
    assert (words.workers, words.server, words.control.options().result_mode) == (["h4", "h2"], "h1", "unicast")
    assert lab("--workers", "h3,h1", "h2").workers == ["h3", "h1", "h2"]
    assert (lab("--workers", "2").workers, lab().server) == (["h1", "h2"], "h5")
    assert lab().workers == ["h1", "h2", "h3", "h4"]
    capsys.readouterr()
    assert lab("--results", "unicast").control.options().result_mode == "unicast"
    assert (
        capsys.readouterr().err
        == "python -m topologies.mininet_lab: warning: --results is deprecated, use --result-mode\n"
    )
    with pytest.raises(SystemExit):
        mininet_lab.main([STAR, "--workers", "0"])
    assert "--workers 0: a job needs at least one worker" in capsys.readouterr().err
