"""helion-kiln's tuning engine: specs, plan, strategies, tune, lock, report, CLI; `runtime` ships in wheels."""
