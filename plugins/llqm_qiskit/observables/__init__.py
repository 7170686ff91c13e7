"""What a pipeline measures and its exact value: an observable read from counts
(``expectation``), Pauli sums measured basis by basis (``pauli``), the noiseless reference
(``ideal``), the user's own circuit and observable shaped as Qiskit's Estimator
(``estimator``), and observables as JSON data for a re-analysis (``specs``). Imports
``backends``, ``devices`` and the plugin's top-level leaves.
"""

from llqm_core.moved import forward_names

# ``llqm_qiskit.observables`` was the module that is now ``llqm_qiskit.observables.expectation``.
__getattr__ = forward_names(__name__, "llqm_qiskit.observables.expectation")
