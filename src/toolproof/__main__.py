"""`python -m toolproof` is the `toolproof` command."""

from toolproof.cli import main

main()
