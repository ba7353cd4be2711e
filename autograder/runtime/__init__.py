"""runtime: what Gradescope runs, and all it runs — intake, the grading pipeline, results, the sandbox.

The Gradescope zip ships exactly the closure of this sub-package's imports (with `core`), computed by
`autograder.packaging.build`; it never imports authoring, packaging, batch, exports or selftest code.
"""
