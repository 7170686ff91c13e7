"""``mitigate.pec``: probabilistic error cancellation in Mitiq's three phases, each a module of its own.

``construct`` represents the gates (``represent``, from ``noise`` or, sampling into the
compiled circuit, ``compiled``) and samples circuits in chunks (``sampling``); ``execute``
runs every sample and the unmitigated baseline in one job; ``combine`` weighs the samples'
values by their signs (Mitiq's ``combine_results``); ``stage`` wires them into the stage.
Imports the plugin's leaf modules, no other technique. More in docs/modules.md
(``llqm_mitiq.pec.compiled``) and docs/pipelines.md ("How PEC is computed").
"""
