"""The agents: planner, executor and synthesizer loops over a Provider. No Django here either:
they take plain data and report progress through a callback, so services decide what to store."""
