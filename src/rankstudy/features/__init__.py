"""Features: normalisation, the second-order Pearson rho filter and feature-set types."""
