"""GPU readings through NVML, when an NVIDIA GPU and nvidia-ml-py are present.

Without either, ``GpuProbe.available`` is False and ``reason`` says why: profiling goes on
and the profile's GPU fields say that no GPU was measured.

Only the shared sampler's thread reads NVML, never a task's start or end: the calls cost a
short task as much as the rest of LLQM's work, and NVML's utilisation shows late anyway
(docs/performance.md).
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from ..model.records import GpuProfile
from .per_process import PerProcess

NOT_SAMPLED_REASON = (
    "no GPU reading fell within the task: it ended before the sampler's next reading"
)
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"


def visible_devices(spec: str | None, uuids: list[str]) -> list[int]:
    """The NVML indexes of the GPUs that ``CUDA_VISIBLE_DEVICES`` (``spec``) lets this process use:
    on a shared node NVML sees every GPU, and other jobs' work is not this pipeline's.

    As CUDA reads it: unset, every GPU; entries are nvidia-smi indexes or GPU UUIDs (a unique
    prefix will do), and the list ends at the first entry that names no GPU. A MIG entry
    (``MIG-...``) gives every GPU: NVML does not report utilisation per MIG instance."""
    if spec is None or any(entry.strip().startswith("MIG-") for entry in spec.split(",")):
        return list(range(len(uuids)))
    chosen: list[int] = []
    for entry in (entry.strip() for entry in spec.split(",")):
        if entry.isdigit():
            index = int(entry) if int(entry) < len(uuids) else None
        else:
            matches = [
                i
                for i, uuid in enumerate(uuids)
                if entry.startswith("GPU-") and uuid.startswith(entry)
            ]
            index = matches[0] if len(matches) == 1 else None
        if index is None or index in chosen:
            break
        chosen.append(index)
    return chosen


class GpuProbe:
    def __init__(self) -> None:
        self.available = False
        self.reason: str | None = None
        self._handles: list = []
        self._nvml: Any = None  # the pynvml module, once it answered
        try:
            import pynvml  # provided by the nvidia-ml-py distribution (extra 'gpu')
        except ImportError:
            self.reason = "nvidia-ml-py is not installed (pip install 'llqm[gpu]')"
            return
        try:
            pynvml.nvmlInit()
            every = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
            spec = os.environ.get(VISIBLE_ENV)
            self._handles = [
                every[i]
                for i in visible_devices(spec, [pynvml.nvmlDeviceGetUUID(h) for h in every])
            ]
            if self._handles:
                self._nvml = pynvml
                # a library that initialises but cannot read (a forked child's, say) is no GPU
                self._read()
        except pynvml.NVMLError as exc:
            self._handles, self._nvml = [], None
            self.reason = f"NVML is unavailable: {exc}"
            return
        if not self._handles:
            self.reason = (
                f"{VISIBLE_ENV}={spec!r} leaves no GPU to this process"
                if every
                else "NVML found no GPU"
            )
            return
        self.available = True

    @cached_property
    def unavailable(self) -> GpuProfile:
        """The GPU part of every profile while no GPU can be read (one shared, frozen value)."""
        return GpuProfile(available=False, reason=self.reason)

    @cached_property
    def unavailable_values(self) -> tuple:
        """``unavailable`` as a profile's values: what every task's end adds while no GPU can be
        read, made once."""
        return self.unavailable.values()

    @cached_property
    def not_sampled(self) -> GpuProfile:
        """The GPU part of a task too short for any of the sampler's readings (one shared value)."""
        return GpuProfile(available=True, reason=NOT_SAMPLED_REASON, devices=self.devices)

    @property
    def devices(self) -> int:
        return len(self._handles)

    def read(self) -> tuple[float, int] | None:
        """Highest utilisation (%) over the devices and their total memory in use (bytes), by
        all processes on them; None when NVML fails to answer."""
        if not self.available:
            return None
        try:
            return self._read()
        except self._nvml.NVMLError:
            return None

    def _read(self) -> tuple[float, int]:
        nvml = self._nvml
        utils = [nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self._handles]
        memory = sum(nvml.nvmlDeviceGetMemoryInfo(h).used for h in self._handles)
        return float(max(utils)), int(memory)


_probes = PerProcess(GpuProbe)  # a forked child may not read through its parent's NVML session


def gpu_probe() -> GpuProbe:
    """The process's one probe: NVML is initialised once per process, on first use."""
    return _probes.get()
