"""The thundering herd, simulated: many agents, one upstream that fails for a while (see sim.py)."""
