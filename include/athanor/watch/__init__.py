"""The spend watch: daily cost anomalies against their seasonal expectation, the spend forecast
with its backtest, and budgets, each alert sent to the webhook once (the `watch_spend` stage)."""
