"""batch: grading a whole class on the instructor's machine — grade-all, the gradebook, regrade diffs,
the class report and LMS exports."""
