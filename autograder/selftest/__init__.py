"""selftest: the package grading itself — the demo batch and the adversarial submissions it runs."""
