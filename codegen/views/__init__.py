"""What users read about a model: `inspect` (`inspection`), `report` (`report`),
`convert` (`exporter`), and refusals that say what would work (`refusal`)."""
