from gpushare.cli import entry

entry()
