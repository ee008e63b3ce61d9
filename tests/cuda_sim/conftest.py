"""The simulator's test process (see ``tests/simulator_run.py``)."""

from simulator_run import quicken_simulator

quicken_simulator()
