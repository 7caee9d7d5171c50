"""Marks the folder a package so that mypy and the tests name the Python client
``clients.python.leaderboard_client`` however they reach it."""
