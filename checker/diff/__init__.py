"""`ctmc diff`: what a change to a spec did to its models' behaviours.

- `versions`: BASE's files (a git revision exported, or a folder) beside the head's;
- `side`: one model under one version, in a child process of its own;
- `compare`: findings from the two runs, and which count as regressions;
- `behaviours`: the shortest behaviour one design allows and the other does not;
- `run`: the coordinator that ties them together.

Presentation (tables, Markdown, JSON, JUnit) lives in `checker.reporting.diffs`.
"""
