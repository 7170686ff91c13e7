"""A sample third-party LLQM plugin: the ``sample.entropy`` stage and the ``sample.basic`` backend.

LLQM loads it through the entry point ``sample`` of the ``llqm`` group
(``llqm_sample_plugin.plugin``); importing this package needs nothing of LLQM's loader.
"""

from .backend import BasicBackend
from .stages import entropy, entropy_bits

__all__ = ["BasicBackend", "entropy", "entropy_bits"]
