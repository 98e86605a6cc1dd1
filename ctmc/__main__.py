"""`python -m ctmc`: the same as the `ctmc` command."""

from ctmc import main

main()
