"""The InstallerSettings document: its model, its flags, and loading it from files and options."""
