"""The `lucy` command: each subcommand a thin layer over functions the tests call."""
