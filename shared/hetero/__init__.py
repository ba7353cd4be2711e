"""hetero: the reference simulators for lecture A2 (LLM serving on heterogeneous hardware).

Students and graders both run this package. It holds the hardware/model catalog, the roofline and
KTransformers accounting, the Mooncake KV-cache pool and overload simulators, the small MoE and its
trainer, and the lecture drivers (`python -m hetero.lecture 01|02|03`). It never contains an answer
to an exercise: every exercise function is loaded from the implementation named by `--impl`
(see `hetero.impl`).
"""

__version__ = "0.1.0"
