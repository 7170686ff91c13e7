"""Reading stored runs: what their tasks add up to, shown as tables, pictures and pages.

It owns exclusive times, the critical path, the bottleneck and the fidelity figures
(``summary``), the report for machines and people (``report``), two runs side by side
(``compare``), a run's tasks as flat rows (``tables``), plots and the self-contained HTML page.
It imports ``model`` and ``store`` only: it reads what a run left behind, whatever ran it.
"""
