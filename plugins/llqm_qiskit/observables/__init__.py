"""What a pipeline measures and its exact value: an observable read from counts
(``expectation``), Pauli sums measured basis by basis (``pauli``), the noiseless reference
(``ideal``), the user's own circuit and observable shaped as Qiskit's Estimator
(``estimator``), and observables as JSON data for a re-analysis (``specs``). Imports
``backends``, ``devices`` and the plugin's top-level leaves.
"""
