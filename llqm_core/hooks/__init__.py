"""The plugin API and the plugin manager: what a plugin may implement, and how it is loaded.

It owns the hook specifications (``hookspecs``, the reference third parties write against),
loading entry points of the ``llqm`` group into one pluggy manager (``plugins``) and the
generated reference (``hookdoc``). It imports only ``llqm_core.model``: every other layer calls
plugins through it, so it cannot depend on them.
"""
