"""authoring: the instructor's tools that turn solutions/ into everything derived from it — the
student release, stored expected values, wrong-submission fixtures and their scores, mutation runs."""
