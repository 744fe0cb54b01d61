"""The `kbert` command line: one thin module per subcommand."""
