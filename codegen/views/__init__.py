"""What users read about a model: `inspect` (`inspection`), `report` (`report`, and
`budget` for several models), `convert` (`exporter`), refusals that say what would work
(`refusal`), the program a command builds for its board (`shipped`), what `verify` and
`run --count-*` print (`verify_text`, `counts`) and the board list (`boards`)."""
