"""The framework-free heart of agentsite: plan schema, DAG validation, scheduling.

Nothing in this package may import Django, Celery or Channels; a test holds it to that.
"""
