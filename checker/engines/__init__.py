"""Engines explore a Machine: explicit-state (`explicit/`), Spark (`spark/`) and Z3
(`symbolic/`); `result.py` and `report.py` are what they share."""
