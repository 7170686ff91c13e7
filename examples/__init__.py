"""LLQM's examples, installed as the package ``llqm_examples``: pipeline files (pipelines/, with
the circuits and observables they read in circuits/), unmodified programs to profile
(programs/), Python examples and a notebook. ``llqm examples`` lists them and ``llqm examples
copy NAME`` writes one out; the sample plugin (llqm_sample_plugin/) is a distribution of its own.
"""
