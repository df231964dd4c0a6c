"""End-to-end tests: the scheduler as a process against a real kube-apiserver (see conftest.py)."""
