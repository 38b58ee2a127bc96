"""Where the generated C runs: host builds (`build`), Cortex-M firmware
(`firmware`), QEMU runs and instruction counts (`qemu`), the cycle model (`cycles`)."""
