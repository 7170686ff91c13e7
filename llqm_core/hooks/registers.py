"""What each ``llqm_register_*`` hook hands a plugin: the ``register`` callback's signature, so
that mypy checks a plugin's calls against it (``hookspecs`` annotates the hooks with these)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .contracts import Instrumenting, Policy, Section, StageStep


class RegisterExporter(Protocol):
    """``register`` of ``llqm_register_exporters``: a factory of an OpenTelemetry SpanExporter."""

    def __call__(
        self,
        name: str,
        factory: Callable[[], Any],
        /,
        *,
        batched: bool = True,
        description: str = "",
    ) -> None: ...


class RegisterStage(Protocol):
    """``register`` of ``llqm_register_stages``: ``factory(**options)`` returns the step."""

    def __call__(
        self, name: str, factory: Callable[..., StageStep], /, *, description: str = ""
    ) -> None: ...


class RegisterSection(Protocol):
    """``register`` of ``llqm_register_sections``."""

    def __call__(self, name: str, section: Section, /, *, description: str = "") -> None: ...


class RegisterBackend(Protocol):
    """``register`` of ``llqm_register_backends``; ``default``: a file without ``[backend] name``
    runs on it."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., Any],
        /,
        *,
        description: str = "",
        default: bool = False,
    ) -> None: ...


class RegisterInstrumentor(Protocol):
    """``register`` of ``llqm_register_instrumentors``."""

    def __call__(
        self, name: str, factory: Callable[[], Instrumenting], /, *, description: str = ""
    ) -> None: ...


class RegisterPolicy(Protocol):
    """``register`` of ``llqm_register_policies``: ``factory(**options)`` returns a ``Policy``."""

    def __call__(
        self, name: str, factory: Callable[..., Policy], /, *, description: str = ""
    ) -> None: ...


class RegisterDecisionPoint(Protocol):
    """``register`` of ``llqm_register_decision_points``: ``context`` is the ``TypedDict`` of the
    keyword arguments the point's policies' ``decide(**context)`` receive."""

    def __call__(self, name: str, context: type, /, *, description: str = "") -> None: ...


class RegisterEngine(Protocol):
    """``register`` of ``llqm_register_engines``: ``run_pipeline(pipeline, store=, on_step=)``
    returns ``(run_id, data)``."""

    def __call__(
        self,
        name: str,
        run_pipeline: Callable[..., tuple[str, dict[str, Any]]],
        /,
        *,
        description: str = "",
    ) -> None: ...
