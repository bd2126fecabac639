"""The `gpushare` subcommands, one module each: its flags (`add_arguments`) and its run (`main`), over the library
they drive. Each imports only what it uses, so a command starts without loading the others' libraries; none knows
another. What several share is defined once: the argument types and the cluster facts (`arguments`), and the fleet
they read, files or a live cluster (`fleet`). The registry of commands is `gpushare.cli`."""
