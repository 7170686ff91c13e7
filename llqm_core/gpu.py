"""GPU readings through NVML, when an NVIDIA GPU and nvidia-ml-py are present.

Without either, ``GpuProbe.available`` is False and ``reason`` says why: profiling goes on
and the profile's GPU fields say that no GPU was measured.
"""

from __future__ import annotations

import threading
from functools import cached_property

from .model import GpuProfile


class GpuProbe:
    def __init__(self) -> None:
        self.available = False
        self.reason: str | None = None
        self._handles: list = []
        self._nvml = None
        try:
            import pynvml  # provided by the nvidia-ml-py distribution (extra 'gpu')
        except ImportError:
            self.reason = "nvidia-ml-py is not installed (pip install 'llqm[gpu]')"
            return
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except pynvml.NVMLError as exc:
            self.reason = f"NVML is unavailable: {exc}"
            return
        if not self._handles:
            self.reason = "NVML found no GPU"
            return
        self._nvml = pynvml
        self.available = True

    @cached_property
    def unavailable(self) -> GpuProfile:
        """The GPU part of every profile while no GPU can be read (one shared, frozen value)."""
        return GpuProfile(available=False, reason=self.reason)

    @property
    def devices(self) -> int:
        return len(self._handles)

    def read(self) -> tuple[float, int] | None:
        """Highest utilisation (%) over the devices and their total memory in use (bytes)."""
        if not self.available:
            return None
        nvml = self._nvml
        try:
            utils = [nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self._handles]
            memory = sum(nvml.nvmlDeviceGetMemoryInfo(h).used for h in self._handles)
        except nvml.NVMLError:
            return None
        return float(max(utils)), int(memory)


_probe: GpuProbe | None = None
_probe_lock = threading.Lock()


def gpu_probe() -> GpuProbe:
    """The process's one probe: NVML is initialised once, on first use."""
    global _probe
    with _probe_lock:
        if _probe is None:
            _probe = GpuProbe()
        return _probe
