"""The pipeline file's parts this plugin owns: its sections (``sections``: ``[circuit]``,
``[observable]``, ``[transpile]``, ``[execution]``) and the steps they become (``steps``:
generate, observable, transpile). The top of the plugin: it may import every other subpackage.
"""
