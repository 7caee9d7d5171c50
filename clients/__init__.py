"""The service's client libraries; a package only so that the Python one has a single module name
in the repository's checks (``clients.python.leaderboard_client``)."""
