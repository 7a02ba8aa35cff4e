"""Divergence monitors for stochastic VMP."""
from .base import Monitor as Monitor
from .domain import DomainMonitor as DomainMonitor
from .elbo import ElboMonitor as ElboMonitor
from .noise import NoiseMonitor as NoiseMonitor
