"""The scheduler plugins gpushare models, one module each, as kube-scheduler's framework/plugins/<name>/ holds one:
its filter (with the scheduler's reason text), its pre-filter, score and normalisation, and what the fast engine's
indexes read of it. Names come from `gpushare.domain.kubescheduler`; which plugins run, in which order and with which
weights, is a profile's (`gpushare.placement.pluginsets`)."""
