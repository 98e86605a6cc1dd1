"""How results read: everything the command line prints, so `cli.py` stays a pipeline
(load the model, build the machine, run an engine, report).

- `cells`: the table helpers every report shares;
- `verdicts`: a run's header, statistics, coverage and verdict, and its JSON;
- `proofs`: what `prove` and `infer` found;
- `gates`: the CI gate's table;
- `listings`: specs, models, and a spec's properties, mutations and parameters;
- `live`: progress on stderr while the work goes on.

Traces have their own viewers in `checker.traces` (terminal and HTML).
"""
