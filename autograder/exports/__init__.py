"""exports: the same exercises as notebooks — student notebooks, an nbgrader course, Otter masters."""
