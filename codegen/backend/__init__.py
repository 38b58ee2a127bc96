"""IR -> C: each node lowered to kernel calls (`lowering`), the quantized-I/O boundary
(`io_boundary`), the arena planned (`planner`), the project's files rendered
(`emitter`, `interface`, `packaging`) and written atomically (`project`)."""
