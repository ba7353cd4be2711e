"""autograder: the release tool, the sandboxed grader, the Gradescope builder and the exports.

`python -m autograder --help` lists the commands. Everything reads `autograder.core.manifest`.
"""
