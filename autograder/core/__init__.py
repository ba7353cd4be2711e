"""core: what every other part reads — the manifest, the case store, the scoring rule, text safety.

Imports nothing of the other sub-packages.
"""
