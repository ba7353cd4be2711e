"""Files that sit at the root of the Gradescope autograder zip (setup.sh, run_autograder, fallback.py).

`python -m autograder build` copies them there; `fallback.failure_results` is also what the bulk
grader records for a submission whose grading run crashed or timed out.
"""
