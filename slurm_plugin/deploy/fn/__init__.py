"""The function service: the gateway (HTTP for clients, TCP for pilots; :mod:`.gateway`) and the pilot job
(:mod:`.pilot`) that keeps one warm container per function on its node."""
