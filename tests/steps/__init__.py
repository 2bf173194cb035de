"""The composite actions and workflows (action.yml, actions/, .github/) and the Python behind them
(scripts/steps/)."""
