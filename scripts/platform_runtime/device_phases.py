"""The device worker's phases: where it is (Stage, so a failure says where it happened) and what each phase
measured (Phases: bytes allocated and resident, the devices of its tensors, a synchronize after it). Its own
module so that the worker and the phases it runs (device_training, device_checkpoint) all read it, none importing
the worker."""

from __future__ import annotations

import contextlib

from platform_runtime.device_resolve import device_kind, synchronize


class Stage:
    """Remembers the last stage reached, so a failure says where it happened."""

    def __init__(self) -> None:
        self.name = "import"

    def __call__(self, name: str) -> None:
        self.name = name


class Phases:
    """Per phase: device bytes it allocated (peak reset before it), bytes resident at its end, the devices
    of its tensors, and a synchronize after it. On the CPU the byte counts are None."""

    def __init__(self, torch, device, stage: Stage) -> None:
        self.torch, self.device, self.stage = torch, device, stage
        self.kind = device_kind(torch, device)
        self.records: dict[str, dict] = {}

    def _allocated(self) -> int | None:
        if self.device.type == "cuda":
            return int(self.torch.cuda.memory_allocated(self.device))
        if self.device.type == "mps":
            return int(self.torch.mps.current_allocated_memory())
        return None

    @contextlib.contextmanager
    def __call__(self, name: str):
        self.stage(name)
        synchronize(self.torch, self.device)
        if self.device.type == "cuda":
            self.torch.cuda.reset_peak_memory_stats(self.device)
        start = self._allocated()
        record: dict = {"tensor_devices": []}
        yield record
        synchronize(self.torch, self.device)
        resident = self._allocated()
        if self.device.type == "cuda":
            allocated = int(self.torch.cuda.max_memory_allocated(self.device)) - start
        else:
            allocated = None if resident is None else max(0, resident - start)
        record.update(allocated_bytes=allocated, resident_bytes=resident, synchronized=True,
                      on_device=record["tensor_devices"] == [self.kind])
        self.records[name] = record

    def devices_of(self, tensors) -> list[str]:
        kinds = {self.kind if t.device.type == self.device.type else t.device.type for t in tensors}
        return sorted(kinds)
