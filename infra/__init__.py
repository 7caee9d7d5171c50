"""The CDK app that deploys the service (``app.py``) and its one stack (``leaderboard_stack.py``,
composed of the parts in the other modules)."""
