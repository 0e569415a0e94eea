"""Command line of the project (`sssp`): glue only, no algorithms here."""
